"""``python -m abbench`` runs the CLI."""

from abbench.cli import main

if __name__ == "__main__":
    main()
