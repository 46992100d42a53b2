"""Superset's own virtualenv and its home: config, secret, metadata database and admin account.

The virtualenv is made once from ``superset_assets/requirements.lock`` and reused (it is stamped
with the lock it was made from). The home is a folder of the project's data (``data/superset``):
a config with a generated secret (never committed), SQLite metadata, an in-process cache and rate
limiter, and the admin account, initialised once (``superset db upgrade``, ``fab create-admin``,
``init``) and reused by every later start.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import sys
import venv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from paperhouse.settings import venv_executable

LOCK = "requirements.lock"
DEFAULT_USER = "admin"
CONFIG_TEMPLATE = """\
# Written by `paperhouse superset` (paperhouse.bi.environment); the secret beside it is generated.
from pathlib import Path

HOME = Path(__file__).parent
SECRET_KEY = (HOME / "secret_key").read_text().strip()
SQLALCHEMY_DATABASE_URI = f"sqlite:///{HOME / 'superset.db'}"
CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache"}
# No cache of chart data: every view reads the warehouse, so a run's new version shows at once.
DATA_CACHE_CONFIG = {"CACHE_TYPE": "NullCache"}
RATELIMIT_STORAGE_URI = "memory://"
"""


def assets() -> Path:
    """The lock and the dashboards' bundle, inside the package."""
    return Path(str(resources.files("paperhouse.bi") / "superset_assets"))


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str


@dataclass(frozen=True)
class SupersetHome:
    """Superset's files for one warehouse: ``<data folder>/superset``."""

    path: Path

    @property
    def config(self) -> Path:
        return self.path / "superset_config.py"

    @property
    def credentials_file(self) -> Path:
        return self.path / "credentials.json"

    @property
    def initialised(self) -> Path:
        return self.path / ".initialised"

    @property
    def pid_file(self) -> Path:
        return self.path / "server.pid"

    @property
    def log(self) -> Path:
        return self.path / "server.log"

    def environment(self) -> dict[str, str]:
        return os.environ | {"SUPERSET_CONFIG_PATH": str(self.config), "FLASK_APP": "superset.app:create_app()"}

    def write_config(self) -> None:
        """The config, and a secret made once: rotating it would make Superset's stored secrets unreadable."""
        self.path.mkdir(parents=True, exist_ok=True)
        secret = self.path / "secret_key"
        if not secret.exists():
            _write_private(secret, secrets.token_urlsafe(48))
        self.config.write_text(CONFIG_TEMPLATE)

    def credentials(self, user: str = "", password: str = "") -> Credentials:
        """The admin account: the one given (``PAPERHOUSE_SUPERSET_USER``/``_PASSWORD``), else the one
        kept from the first start, else ``admin`` with a generated password, kept for the next start."""
        kept = json.loads(self.credentials_file.read_text()) if self.credentials_file.exists() else {}
        chosen = Credentials(user or kept.get("user") or DEFAULT_USER, password or kept.get("password") or "")
        if not chosen.password:
            chosen = Credentials(chosen.user, secrets.token_urlsafe(12))
        if kept != chosen.__dict__:
            _write_private(self.credentials_file, json.dumps(chosen.__dict__))
        return chosen


def ensure_virtualenv(folder: Path) -> Path:
    """Superset's virtualenv at ``folder``, made from the lock when missing or made from another lock;
    its ``bin`` folder."""
    lock = assets() / LOCK
    stamp = folder / ".lock"
    if stamp.exists() and stamp.read_text() == lock.read_text():
        return folder / "bin"
    print(f"making Superset's virtualenv in {folder} (about a minute, once)", flush=True)
    python = folder / "bin" / "python"
    installer = installer_command(python)
    venv.EnvBuilder(with_pip=installer[0] == str(python), clear=True).create(folder)
    _run([*installer, "--requirement", str(lock)], os.environ.copy())
    stamp.write_text(lock.read_text())
    return folder / "bin"


def installer_command(python: Path, uv: Path | None = None) -> list[str]:
    """What installs the lock into the virtualenv of ``python``: uv where it is installed beside the
    running Python (`make install` puts it there; it unpacks and compiles on every core, in half
    pip's time), else that virtualenv's own pip. The bytecode is compiled either way, as pip does."""
    uv = uv or Path(venv_executable("uv"))
    if uv.is_file():
        return [str(uv), "pip", "install", "--quiet", "--python", str(python), "--compile-bytecode"]
    return [str(python), "-m", "pip", "--quiet", "--disable-pip-version-check", "install"]


def initialise(home: SupersetHome, bin_dir: Path, account: Credentials) -> None:
    """Superset's metadata database and roles, once per home, and the admin account as asked: made
    when new, its password set again when it changed."""
    home.write_config()
    superset, env = [str(bin_dir / "superset")], home.environment()
    # The account Superset has, its password hashed: the file says what was done, not a second copy.
    wanted = {"user": account.user, "password_sha256": hashlib.sha256(account.password.encode()).hexdigest()}
    done = json.loads(home.initialised.read_text()) if home.initialised.exists() else None
    if done is None:
        _run([*superset, "db", "upgrade"], env)
        _run([*superset, "init"], env)
    if done != wanted:
        if done is not None and done["user"] == account.user:
            _run([*superset, "fab", "reset-password", "--username", account.user, "--password", account.password], env)
        else:
            _run([*superset, "fab", "create-admin", "--username", account.user, "--firstname", "paperhouse",
                  "--lastname", "admin", "--email", f"{account.user}@localhost",
                  "--password", account.password], env)  # fmt: skip
        _write_private(home.initialised, json.dumps(wanted))


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (a secret, a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(text)


def _run(command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-3000:])
        raise RuntimeError(f"{' '.join(command[:3])} failed (exit code {done.returncode})")
