"""Dependency aliases for the routers: the loaded engine, the settings and the admin check.

They are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency in the thread pool, i.e. one thread
hop per request for an attribute lookup (measured: a sixth of the event loop's time under load).
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request, Security, status
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.engine import Engine
from app.service_settings import ServiceSettings

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The admin key (POLYGLOT_API_KEY).")
_bearer = HTTPBearer(auto_error=False, description="The admin key as a bearer token (alternative to X-API-Key).")


async def get_settings(request: Request) -> ServiceSettings:
    settings: ServiceSettings = request.app.state.settings
    return settings


async def get_engine(request: Request) -> Engine:
    engine: Engine | None = getattr(request.app.state, "engine", None)
    if engine is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the service is still loading its models; retry")
    return engine


SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]
EngineDep = Annotated[Engine, Depends(get_engine)]


async def require_admin(
    settings: SettingsDep,
    key: Annotated[str | None, Security(_api_key_header)] = None,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> None:
    """401 without a key, 403 with a wrong one, 503 when no key is configured (admin disabled)."""
    if settings.api_key is None or not settings.api_key.get_secret_value():
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, "admin disabled: set POLYGLOT_API_KEY to enable admin endpoints"
        )
    given = key or (bearer.credentials if bearer is not None else None)
    if not given:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "admin endpoint: send the API key in the X-API-Key header",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not hmac.compare_digest(given.encode(), settings.api_key.get_secret_value().encode()):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "wrong API key")


AdminDep = Annotated[None, Depends(require_admin)]
