"""Commands for a server's API keys: keys create OWNER (printed once), keys list, keys revoke KEY_ID."""

from __future__ import annotations

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx


@cli.group("keys")
def keys_group() -> None:
    """API keys for `abbench serve`: each acts for one owner, with scopes, until it expires or is revoked.

    The store keeps only a peppered hash of a key (the pepper from $ABBENCH_KEY_PEPPER or the file
    STORE.key-pepper beside the store, mode 0600), so a key is shown once, when it is made.
    """


@keys_group.command("create")
@click.argument("owner")
@click.option(
    "--scopes",
    default="read,run,review",
    show_default=True,
    help="Comma-separated: read (results), run (create and run), review, admin (everything).",
)
@click.option("--expires", default="90d", show_default=True, help="90d, 12h, 30m, or never.")
@json_option
@pass_ctx
def keys_create_cmd(ctx: Context, owner: str, scopes: str, expires: str, as_json: bool) -> None:
    """Make a key for OWNER and print it once (store it in your CI's secrets: it is not kept)."""
    key, text = ctx.store.keys.create(owner, scopes=scopes, expires=expires)
    data = {**key.as_dict(), "key": text}

    def human() -> None:
        click.echo(text)
        click.echo(
            f"key {key.key_id} for owner {key.owner}: scopes {','.join(key.scopes)}, "
            f"expires {key.expires_at or 'never'}. Shown once: it is not stored.",
            err=True,
        )

    emit(as_json, data, human)


@keys_group.command("list")
@click.option("--owner", help="Only this owner's keys.")
@json_option
@pass_ctx
def keys_list_cmd(ctx: Context, owner: str | None, as_json: bool) -> None:
    """List keys (ids, owners, scopes, expiry, last use; never a secret)."""
    keys = ctx.store.keys.all(owner)

    def human() -> None:
        if not keys:
            click.echo("no keys; make one with: abbench keys create OWNER")
        for k in keys:
            state = "revoked" if k.revoked_at else ("active" if k.active else "expired")
            click.echo(
                f"{k.key_id}  {k.owner:<20} {','.join(k.scopes):<22} {state:<8} "
                f"expires {k.expires_at or 'never'}  last used {k.last_used_at or 'never'}"
            )

    emit(as_json, [k.as_dict() for k in keys], human)


@keys_group.command("revoke")
@click.argument("key_id")
@json_option
@pass_ctx
def keys_revoke_cmd(ctx: Context, key_id: str, as_json: bool) -> None:
    """Revoke the key KEY_ID (the 12 hex after abk_); a server refuses it from its next request."""
    key = ctx.store.keys.revoke(key_id)
    emit(as_json, key.as_dict(), f"revoked key {key.key_id} of {key.owner} at {key.revoked_at}")
