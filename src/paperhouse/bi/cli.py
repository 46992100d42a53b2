"""`paperhouse superset`: Apache Superset on the published warehouse, with paperhouse's dashboards."""

from __future__ import annotations

import argparse
import sys

from paperhouse.bi import bundle, server
from paperhouse.bi.api import SupersetClient
from paperhouse.bi.environment import SupersetHome, ensure_virtualenv, initialise
from paperhouse.settings import resolve_paths, settings


def cmd_superset(args: argparse.Namespace) -> int:
    warehouse, config = resolve_paths(None, args.warehouse).warehouse, settings()
    home = SupersetHome(warehouse.parent / "superset")
    if args.stop:
        print("Superset stopped" if server.stop(home) else "Superset was not running")
        return 0
    if not warehouse.exists():
        print(f"paperhouse: no warehouse at {warehouse}: build it first (make run)", file=sys.stderr)
        return 1
    port = args.port or config.superset_port
    account = home.credentials(config.superset_user, config.superset_password)
    bin_dir = ensure_virtualenv(config.superset_venv.resolve())
    if server.running_pid(home) is None or not server.answers(port):
        server.stop(home)  # a server of this home on another port, or one that stopped answering
        initialise(home, bin_dir, account)
        server.start(home, bin_dir, port)
    client = SupersetClient(server.url(port), account.user, account.password)
    if args.export:
        written = bundle.export_dashboards(client)
        print(f"exported {len(written)} files to {bundle.bundle_folder()}")
        return 0
    bundle.import_dashboards(client, warehouse)
    datasets = bundle.register_marts(client, warehouse)
    dashboards = [d for d in client.listed("dashboard") if d["dashboard_title"].startswith(bundle.DASHBOARD_PREFIX)]
    print(f"Superset serves {len(dashboards)} dashboards and {len(datasets)} mart datasets on {server.url(port)}")
    for dashboard in sorted(dashboards, key=lambda d: d["dashboard_title"]):
        print(f"  {dashboard['dashboard_title']:<28} {server.url(port)}/superset/dashboard/{dashboard['slug']}/")
    print(f"  log in as {account.user} / {account.password} (kept in {home.credentials_file})")
    print("  stop it with: make superset-stop")
    return 0


def add_superset_commands(commands) -> None:
    superset = commands.add_parser(
        "superset", help="serve Apache Superset on the warehouse with paperhouse's dashboards (docs/bi.md)"
    )
    superset.add_argument(
        "--warehouse", help="warehouse file (default: $PAPERHOUSE_WAREHOUSE or data/paperhouse.duckdb)"
    )
    superset.add_argument("--port", type=int, help="port on 127.0.0.1 (default: $PAPERHOUSE_SUPERSET_PORT, else 8088)")
    superset.add_argument("--stop", action="store_true", help="stop the server")
    superset.add_argument(
        "--export", action="store_true", help="write the dashboards as they are in Superset back to the YAML bundle"
    )
    superset.set_defaults(handler=cmd_superset)
