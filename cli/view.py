"""`eviscene view`: a local, read-only web UI over the log."""

from __future__ import annotations

import errno

import click

from eviscene.errors import EvisceneError
from eviscene.log import EventLog


@click.command(short_help="Serve a read-only web UI over the log.")
# A port outside 0-65535 is a usage error here: the socket would raise OverflowError, no OSError.
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="TCP port (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind; loopback unless you say otherwise.")
@click.pass_obj
def view(log: EventLog, port: int, host: str) -> None:
    """Serve a read-only web UI over the log: runs with live progress, run dashboards
    (plots), episodes with SQL filters and text search, episode timelines, run comparison.

    \b
    Example:
        eviscene view --port 8765
        eviscene --db runs.duckdb view --host 0.0.0.0 --port 9000
    """
    from eviscene.viewer.server import make_server

    if not host.strip():  # `--host "$VAR"` with VAR unset: the socket would bind every interface, unasked
        raise EvisceneError('--host is empty, which would serve on every interface: leave --host out for loopback '
                            '(127.0.0.1), or name the address (--host 0.0.0.0 for every interface)')
    log.check_file()  # a run could never write there: no page would ever show anything
    try:
        server = make_server(log, host, port)
    except OSError as exc:
        # Most often a viewer started earlier still serves there: say how to get past it.
        busy = "; choose another --port (0: any free port)" if exc.errno == errno.EADDRINUSE else ""
        raise EvisceneError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{busy}") from None
    bound_host, bound_port = server.server_address[:2]
    bound_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    if not log.exists():  # started before the first run, or a mistyped --db: either way, say so
        click.echo(f"note: no log at {log.path} yet; its runs appear here once one writes there", err=True)
    click.echo(f"serving {log.path} at http://{bound_host}:{bound_port}/ (read-only; Ctrl-C stops)", err=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


COMMANDS = [view]
