"""`KeyCatcher`: keyboard shortcuts for a widget box, as labelling tools have them (an anywidget).

ipywidgets has no key events. Two packages add them; this uses anywidget with a few lines of JavaScript
because ipyevents (2.0.4, which installs and loads in JupyterLab 4) listens on the whole document while
the mouse is over the watched widget, swallows *every* key there (the note box could not be typed in)
and blurs the widget when the mouse leaves it, so a key pressed with the mouse elsewhere reaches
JupyterLab, where ``1`` turns the current cell into a heading. Here the keys belong to the box that
holds the catcher: they act while the focus is in it (it takes the focus when shown and after every
action), a key typed in a text field stays text (Escape leaves the field), and only the keys asked for
are kept from JupyterLab. A caught key's message carries the text fields' values as the page shows them,
because ipywidgets holds a field's edits back while the kernel is busy and the key would overtake them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import anywidget
import traitlets

ROOT_CLASS = "abbench-keys-root"
"""The class of the box whose keys a `KeyCatcher` inside it catches."""

_ESM = r"""
function isField(el) {
  if (!el) return false;
  const tag = el.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || el.isContentEditable;
}

function render({ model, el }) {
  el.classList.add("abbench-keys");
  const status = document.createElement("span");
  el.appendChild(status);
  let root = null;
  const show = () => {
    const on = root && root.contains(document.activeElement) && !isField(document.activeElement);
    status.textContent = on ? model.get("on_text") : model.get("off_text");
    status.className = on ? "abbench-keys-on" : "abbench-keys-off";
  };
  const focus = () => {
    if (root && !isField(document.activeElement)) root.focus({ preventScroll: true });
    show();
  };
  const onKey = (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (isField(event.target)) {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        root.focus({ preventScroll: true });
        show();
      }
      return;
    }
    const fields = model.get("fields");
    if (fields[event.key]) {
      const field = root.querySelector(fields[event.key]);
      if (field) {
        event.preventDefault();
        event.stopPropagation();
        field.focus();
        show();
      }
      return;
    }
    if (!model.get("catch").includes(event.key)) return;
    event.preventDefault();
    event.stopPropagation();
    // The text fields as the page has them: ipywidgets holds a field's edits back while the kernel is
    // busy and this message would overtake them (a note typed just before a verdict lost its end).
    const values = {};
    for (const [key, selector] of Object.entries(fields)) {
      const field = root.querySelector(selector);
      if (field && typeof field.value === "string") values[key] = field.value;
    }
    model.send({ key: event.key, fields: values });
  };
  const attach = () => {
    root = el.closest("." + model.get("root_class"));
    if (!root) {
      // Not in the page yet: try again on the next frames (a catcher outside a root box stays idle).
      if (!el.isConnected && attach.tries++ < 600) requestAnimationFrame(attach);
      return;
    }
    if (!root.hasAttribute("tabindex")) root.setAttribute("tabindex", "0");
    // The capture phase: ipywidgets' text boxes stop keydown from bubbling (to keep JupyterLab's
    // shortcuts out of them), and Escape must still leave the note box.
    if (root.__abbenchKeys) root.removeEventListener("keydown", root.__abbenchKeys, true);
    root.__abbenchKeys = onKey;
    root.addEventListener("keydown", onKey, true);
    root.addEventListener("focusin", show);
    root.addEventListener("focusout", () => setTimeout(show, 0));
    focus();
  };
  attach.tries = 0;
  attach();
  model.on("change:focus_token", () => setTimeout(focus, 0));
  model.on("change:on_text", show);
  return () => {
    if (root && root.__abbenchKeys === onKey) {
      root.removeEventListener("keydown", onKey, true);
      delete root.__abbenchKeys;
    }
  };
}
export default { render };
"""

_CSS = """
.abbench-keys { font-size: 12px; }
.abbench-keys-on { color: #1a6b1a; }
.abbench-keys-off { color: #8a5a00; }
.abbench-keys-root:focus { outline: 2px solid #7aa7e0; outline-offset: 2px; }
"""


class KeyCatcher(anywidget.AnyWidget):
    """Catches single keys pressed while the focus is in the box (class `ROOT_CLASS`) holding it.

    Put it in a box that has `ROOT_CLASS`; `on_key` registers what a key does. `press` does what a key
    press in the browser does, for tests and for code.

    Attributes:
        catch: The keys caught (``KeyboardEvent.key`` values such as ``"1"``, ``"u"``).
        fields: Key → CSS selector of a text field inside the box that the key moves the focus to.
    """

    _esm = _ESM
    _css = _CSS
    catch = traitlets.List(traitlets.Unicode()).tag(sync=True)
    fields = traitlets.Dict().tag(sync=True)
    root_class = traitlets.Unicode(ROOT_CLASS).tag(sync=True)
    focus_token = traitlets.Int(0).tag(sync=True)
    on_text = traitlets.Unicode("keys on").tag(sync=True)
    off_text = traitlets.Unicode("click here (not in a text box) to use the keys").tag(sync=True)

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._handlers: dict[str, Callable[[], Any]] = {}
        self._fields: dict[str, Any] = {}
        self._stale: dict[str, str] = {}
        self.on_msg(self._message)

    def on_key(self, key: str, action: Callable[[], Any]) -> None:
        """Run `action()` when `key` is pressed."""
        self._handlers[key] = action
        if key not in self.catch:
            self.catch = [*self.catch, key]

    def bind_field(self, key: str, field: Any) -> None:
        """Keep `field` (a text widget: the one key `key` moves to) as the page shows it when a key acts.

        A caught key's message carries the field's text and sets it before the key acts. The page's own
        edits of the field that ipywidgets held back while the kernel was busy reach the kernel *after*
        that message; one that only repeats the text the key already used, once the key's action has
        changed the field (a verdict clears the note), is stale and is undone, so a note saved with one
        case does not come back and get saved with the next.
        """
        self._fields[key] = field
        field.observe(partial(self._field_changed, key), names="value")

    def _field_changed(self, key: str, change: Any) -> None:
        field = self._fields[key]
        if "value" not in getattr(field, "_property_lock", {}):
            return  # set here in the kernel, not by the page
        stale = self._stale.get(key)
        if stale == change["new"]:
            field.value = change["old"]  # a held-back edit older than the key: the page gets the value back
            self._stale[key] = change["new"]  # (setting it back came through here too)
        else:
            self._stale.pop(key, None)  # typed anew

    def press(self, key: str) -> Any:
        """Do what pressing `key` does; an unknown key does nothing (as in the browser)."""
        action = self._handlers.get(key)
        return action() if action is not None else None

    def refocus(self) -> None:
        """Give the focus back to the box (after a click on a button took it, say)."""
        self.focus_token += 1

    def _message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or not isinstance(content.get("key"), str):
            return
        values = content.get("fields")
        texts = {
            key: text
            for key, text in (values.items() if isinstance(values, dict) else ())
            if key in self._fields and isinstance(text, str)
        }
        for key, text in texts.items():
            field = self._fields[key]
            if self._stale.get(key) != text or text == field.value:  # else the page had not caught up yet
                field.value = text
        try:
            self.press(content["key"])
        finally:
            for key, text in texts.items():
                if self._fields[key].value != text:
                    self._stale[key] = text  # what the key used, now replaced: the page may send it again
                else:
                    self._stale.pop(key, None)
