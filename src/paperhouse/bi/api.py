"""A client of Superset's REST API (``/api/v1``): a logged-in session with its CSRF token."""

from __future__ import annotations

import http.cookiejar
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any


class SupersetError(RuntimeError):
    """Superset answered a request with an error status; the message has its answer."""


class SupersetClient:
    def __init__(self, base_url: str, user: str, password: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self._headers: dict[str, str] = {"Accept": "application/json"}
        login = {"username": user, "password": password, "provider": "db", "refresh": True}
        self._headers["Authorization"] = (
            "Bearer " + self.request("POST", "/api/v1/security/login", login)["access_token"]
        )
        # Writes need the CSRF token of this session (its cookie rides along in the jar).
        self._headers["X-CSRFToken"] = self.request("GET", "/api/v1/security/csrf_token/")["result"]
        self._headers["Referer"] = self.base_url

    def request(self, method: str, path: str, body: Any = None, *, data: bytes | None = None,
                content_type: str | None = None, raw: bool = False) -> Any:  # fmt: skip
        headers = dict(self._headers)
        if body is not None:
            data, content_type = json.dumps(body).encode(), "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=300) as response:
                answer = response.read()
        except urllib.error.HTTPError as error:
            raise SupersetError(
                f"{method} {path}: {error.code} {error.read()[:2000].decode(errors='replace')}"
            ) from None
        return answer if raw else json.loads(answer)

    def listed(self, kind: str) -> list[dict]:
        """Every ``kind`` (``chart``, ``dashboard``, ``dataset``, ``database``), up to a thousand."""
        query = urllib.parse.quote("(page_size:1000)")
        return self.request("GET", f"/api/v1/{kind}/?q={query}")["result"]

    def chart_data(self, chart_id: int) -> dict:
        """The chart's data as its saved query context asks for it: the first query's result."""
        return self.request("GET", f"/api/v1/chart/{chart_id}/data/")["result"][0]

    def import_assets(self, bundle: bytes, passwords: dict[str, str] | None = None) -> None:
        """Import a ZIP bundle of databases, datasets, charts and dashboards, overwriting what is there."""
        boundary = uuid.uuid4().hex
        fields = {"overwrite": "true", "passwords": json.dumps(passwords or {})}
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            for name, value in fields.items()
        ]
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="bundle"; filename="bundle.zip"\r\n'
            "Content-Type: application/zip\r\n\r\n".encode()
            + bundle
            + b"\r\n"
        )
        data = b"".join(parts) + f"--{boundary}--\r\n".encode()
        self.request(
            "POST", "/api/v1/assets/import/", data=data, content_type=f"multipart/form-data; boundary={boundary}"
        )

    def export_dashboards(self, dashboard_ids: list[int]) -> bytes:
        """The dashboards, their charts, datasets and database as Superset's ZIP bundle of YAML files."""
        query = urllib.parse.quote(f"!({','.join(map(str, dashboard_ids))})")
        return self.request("GET", f"/api/v1/dashboard/export/?q={query}", raw=True)
