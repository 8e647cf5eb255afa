"""The error answers as they are, for the OpenAPI schema: every status an operation can return, with its body.

Every error body is ``{"detail": ...}``: a sentence for errors the service raises itself (``HTTPException``:
404, 409, 413, 503 …, and the 422s of checks made in code, e.g. an unsupported ``lang``), or FastAPI's list of
validation issues for a 422 found by request validation. :func:`document_errors` adds them to the generated
schema by rule (which operations can answer what), so no route can forget one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ValidationIssue(BaseModel):
    loc: list[str | int] = Field(max_length=20)
    msg: str = Field(max_length=10_000)
    type: str = Field(max_length=200)


class ErrorBody(BaseModel):
    detail: str | list[ValidationIssue] = Field(
        description="What went wrong, in words (or, for request validation errors, one entry per problem)."
    )
    close_folders: list[str] | None = Field(
        default=None,
        max_length=5,
        description="A `folder` filter that matches no folder: the names of folders that come close (422 only).",
    )
    close_places: list[str] | None = Field(
        default=None,
        max_length=5,
        description="A `place` filter that names no photo's place: the place names that come close (422 only).",
    )


_DESCRIPTIONS = {
    "400": "The request body could not be parsed (malformed multipart or form data).",
    "401": "Admin endpoint: no API key was sent.",
    "403": "Admin endpoint: wrong API key, or a refused server path.",
    "404": "No such image (or its file cannot be served).",
    "408": "The request body stalled (POLYGLOT_BODY_TIMEOUT_SECONDS); the connection is closed.",
    "409": "The index is busy with another writer; retry.",
    "429": "Admin endpoint: too many wrong API keys from this address (POLYGLOT_ADMIN_KEY_TRIES); retry after "
    "Retry-After seconds.",
    "413": "The upload is over the size limit (POLYGLOT_MAX_UPLOAD_BYTES).",
    "422": "Invalid input: the parameters (a list of issues) or the content (a sentence: not an image, an "
    "unsupported language, …).",
    "503": "The service is loading, a backend (database, vector server) is unreachable, or it ran out of memory; "
    "retry after Retry-After seconds.",
    "507": "No space left on the server for the write; retry after Retry-After seconds.",
}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "string"}}}


def _error_response(code: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": _DESCRIPTIONS[code],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    if code in ("429", "503", "507"):
        response["headers"] = _RETRY_AFTER
    return response


def statuses_for(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    """The error statuses an operation can answer, from what it takes (see the module docstring)."""
    if path.endswith("/health"):
        return []
    codes = ["503"]
    has_input = bool(operation.get("parameters")) or "requestBody" in operation
    if has_input:
        codes.append("422")
    if "{image_id}" in path or (method == "post" and path.endswith(("/search/image", "/captions"))):
        codes.append("404")
    if "requestBody" in operation:
        codes += ["400", "408", "413"]
    if operation.get("security"):
        codes += ["401", "403", "409", "429", "507"]
    return sorted(set(codes))


def document_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """Add every error status each operation can return (with the body and headers it has) to ``schema``."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorBody"] = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in components["ErrorBody"].pop("$defs", {}).items():
        components[name] = definition
    for path, methods in schema.get("paths", {}).items():
        for method, operation in methods.items():
            responses = operation.setdefault("responses", {})
            for code in statuses_for(path, method, operation):
                if code == "503" and "503" in responses and "content" in responses["503"]:
                    responses["503"].setdefault("headers", _RETRY_AFTER)
                    continue
                responses[code] = _error_response(code)
    components.pop("HTTPValidationError", None)
    return schema


def apply_limits(schema: dict[str, Any], limits: dict[str, int], languages: list[str] | None) -> dict[str, Any]:
    """Narrow the parameters whose bounds are settings, not constants, to what this service accepts: ``k`` and
    ``offset`` (POLYGLOT_MAX_K, POLYGLOT_MAX_OFFSET), ``q`` (POLYGLOT_MAX_QUERY_CHARS), and ``/search``'s ``lang``
    to the text encoder's languages, so that a value the schema allows is not refused (was: ``lang=0000`` 422)."""
    for path, methods in schema.get("paths", {}).items():
        for operation in methods.values():
            for parameter in operation.get("parameters", []):
                target = parameter.get("schema", {})
                variants = target.get("anyOf", [target])
                for variant in variants:
                    name = parameter.get("name")
                    if (
                        name == "k"
                        and "k" in limits
                        and variant.get("type") == "integer"
                        and path.endswith(("/search", "/search/image"))
                    ):
                        variant["maximum"] = min(variant.get("maximum", limits["k"]), limits["k"])
                    elif (
                        name == "offset"
                        and variant.get("type") == "integer"
                        and path.endswith(("/search", "/search/image"))
                    ):
                        variant["maximum"] = min(variant.get("maximum", limits["offset"]), limits["offset"])
                    elif name == "q" and variant.get("type") == "string":
                        variant["maxLength"] = min(variant.get("maxLength", limits["q"]), limits["q"])
                    elif name == "lang" and path.endswith("/search") and languages and variant.get("type") == "string":
                        variant.pop("maxLength", None)
                        variant["enum"] = sorted(languages)
    return schema
