"""Command-line interface: ``acmemodel COMMAND``. User errors exit with code 2 and one line."""
from __future__ import annotations

import contextlib
import sys

import typer

# Command modules register their commands on ``app`` / ``evaluate_app`` when imported, which the app's
# groups do on first use of a command (``acmemodel.cli._app.COMMANDS``): start-up imports only the command run.
from acmemodel.cli._app import app, evaluate_app  # noqa: F401
from acmemodel.errors import AcmeModelError

#: OSError covers unwritable/missing output directories, a file where a directory is expected, etc.
USER_ERRORS = (AcmeModelError, OSError, ValueError)


@contextlib.contextmanager
def _collected_warnings():
    """Record the Python warnings a command raises (no raw ``file:line: Warning`` block reaches the
    terminal) and print one sentence per model or library on stderr at the end (``-q``: none; ``-v``:
    every distinct message); ``--json`` output carries them as ``warnings`` (:func:`print_json`)."""
    import warnings

    from acmemodel.cli._app import STATE, warning_notes

    STATE.update(quiet=False, verbose=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # once per message and place
        STATE["warnings"] = caught
        ok = False
        try:
            yield
            ok = True
        finally:
            STATE["warnings"] = None
            if caught and ok and not STATE["quiet"]:  # (after an error: its one line only)
                if STATE["verbose"]:
                    for m in dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught):
                        sys.stderr.write(f"warning: {m}\n")
                else:
                    for note in warning_notes(caught):
                        sys.stderr.write(f"note: {note}\n")
                    sys.stderr.write("note: -v shows every warning, -q none\n")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``acmemodel`` script: run the typer app, map user errors to exit 2.

    Usage errors (bad option values) are shown by typer/click and exit 2; :class:`AcmeModelError`,
    ``ValueError`` and file errors print one ``error: ...`` line on stderr and exit 2.
    """
    try:
        with _collected_warnings():
            rv = app(args=argv, standalone_mode=False)
        if isinstance(rv, int) and not isinstance(rv, bool):
            sys.exit(rv)
    except SystemExit:
        raise
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(1)
    except MemoryError:
        sys.stderr.write("error: out of memory; make the request smaller (fewer days, replicas or a smaller "
                         "scale)\n")
        sys.exit(2)
    except Exception as e:
        if isinstance(e, USER_ERRORS) or type(e).__module__ == "pyarrow.lib":
            # (pyarrow's errors outside ValueError/OSError too: "Failed to launch worker thread" under a
            # memory cap)
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            sys.stderr.write(f"error: {msg}\n")
            sys.exit(2)
        # click / typer's vendored click exceptions (usage errors: bad option value, missing option,
        # unknown command): one line; a bare command group (no-args-is-help) shows its help
        if callable(getattr(e, "show", None)) and hasattr(e, "exit_code"):
            if type(e).__name__ == "NoArgsIsHelpError" or not callable(getattr(e, "format_message", None)):
                e.show()
                sys.exit(e.exit_code)
            msg = " ".join(p.strip() for p in str(e.format_message()).splitlines() if p.strip())
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None and ctx.command_path else ""
            sys.stderr.write(f"error: {msg}{hint}\n")
            sys.exit(e.exit_code)
        raise
    sys.exit(0)
