"""The person's door: the ``ctxkeeper`` command (``app``), review, demo, doctor, agent detection."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: "Sequence[str] | None" = None) -> int:
    """The console script's target (``ctxkeeper.cli:main``); ``app`` loads only when it runs."""
    from ctxkeeper.cli.app import main as run

    return run(argv)
