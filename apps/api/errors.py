"""
Every API error becomes `{"error": {"code": "<snake_case>", "message": "…"}}` here, and only here.

Domain errors (`WaypointError`) carry their own code and status; the rest (unparseable JSON,
schema violations, missing credentials, oversize bodies, unknown paths, wrong methods) are mapped
to the contract's codes. Bad input never reaches a 500: the strict parser refuses JSON that the
database or the log's canonical hashing could not hold (NaN, huge integers, NUL characters, lone
surrogates, absurd nesting) before any view runs.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from apps.conversations.errors import ServiceUnavailable, WaypointError

if TYPE_CHECKING:
    from ninja import NinjaAPI

log = logging.getLogger(__name__)

MAX_DEPTH = 32
MAX_SAFE_INTEGER = 2**53 - 1  # RFC 8785 (the log's canonical JSON) and JavaScript clients
CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
         409: "conflict", 413: "payload_too_large", 422: "invalid_request", 429: "rate_limited"}


class MalformedJson(WaypointError):
    """The request body is not valid JSON."""

    code = "malformed_json"
    status = 400


class PayloadTooLarge(WaypointError):
    """The request body is larger than the server accepts."""

    code = "payload_too_large"
    status = 413


class Unauthorized(WaypointError):
    """Send a valid API key or conversation token as `Authorization: Bearer …`."""

    code = "unauthorized"
    status = 401


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def error_response(exc: WaypointError) -> JsonResponse:
    details = {k: v for k, v in exc.details.items() if k != "retry_after"}
    response = JsonResponse(error_body(exc.code, exc.message, **details), status=exc.status)
    if "retry_after" in exc.details:
        response["Retry-After"] = str(exc.details["retry_after"])
    return response


def _reject_constant(name: str) -> None:
    raise MalformedJson(f"{name} is not a JSON number")


def _check_value(value: Any, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise MalformedJson(f"JSON nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        _check_text(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise MalformedJson("numbers must be finite")
    elif isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise MalformedJson("integers must lie within ±(2^53 − 1)")
    elif isinstance(value, list):
        for item in value:
            _check_value(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_value(item, depth + 1)


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise MalformedJson("text must not contain NUL (\\u0000) characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MalformedJson("text must not contain unpaired surrogates") from exc


def load_json(body: bytes) -> Any:
    """
    Parse a request body as strict JSON (UTF-8, I-JSON numbers, no NUL, bounded nesting).

    :raises MalformedJson: anything else
    """
    try:
        text = body.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise MalformedJson("the body is not UTF-8") from exc
    except (ValueError, RecursionError) as exc:
        raise MalformedJson(f"the body is not valid JSON ({str(exc)[:120]})") from exc
    _check_value(value)
    return value


class StrictJsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        value = load_json(request.body)
        # Every body of this API is an object: a list, a string, a number or null is not one with
        # its fields left out, and must not be read as one (the memory clear read `null` as "all").
        if not isinstance(value, dict):
            raise MalformedJson("the body must be a JSON object")
        return value


def _describe(errors: list[dict[str, Any]]) -> list[str]:
    problems = []
    for error in errors[:20]:
        loc = [str(part) for part in error.get("loc", ()) if part not in ("body", "payload", "query", "path")]
        problems.append(f"{'.'.join(loc) or 'body'}: {error.get('msg', 'invalid')}")
    return problems


def install(api: NinjaAPI) -> None:
    """Register the exception handlers that give every error the contract's shape."""

    @api.exception_handler(WaypointError)
    def domain_error(request: HttpRequest, exc: WaypointError) -> HttpResponse:
        return error_response(exc)

    @api.exception_handler(ValidationError)
    def validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        problems = _describe(exc.errors)
        return JsonResponse(error_body("invalid_request", "; ".join(problems), problems=problems), status=422)

    @api.exception_handler(AuthenticationError)
    def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        return error_response(Unauthorized())

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        # ninja wraps parser failures in HttpError(400); the cause says what was wrong.
        if isinstance(exc.__cause__, WaypointError):
            return error_response(exc.__cause__)
        if isinstance(exc.__cause__, RequestDataTooBig):
            return error_response(PayloadTooLarge())
        return JsonResponse(error_body(CODES.get(exc.status_code, "error"), str(exc)), status=exc.status_code)

    @api.exception_handler(RequestDataTooBig)
    def too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        return error_response(PayloadTooLarge())

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return JsonResponse(error_body("not_found", "Not found."), status=404)

    @api.exception_handler(OperationalError)
    @api.exception_handler(InterfaceError)
    def unreachable(request: HttpRequest, exc: Exception) -> HttpResponse:
        log.warning("the database is unreachable: %s %s answered 503", request.method, request.path, exc_info=True)
        response = error_response(ServiceUnavailable())
        response["Retry-After"] = str(ServiceUnavailable.retry_after)
        return response

    @api.exception_handler(Exception)
    def unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        log.exception("unexpected error in %s %s", request.method, request.path)
        return JsonResponse(error_body("internal_error", "Something went wrong on our side."), status=500)


# Paths (and the paths under them) whose multipart uploads may be larger than
# DATA_UPLOAD_MAX_MEMORY_SIZE, each with the largest body it takes (a function, so settings changed at run time count). Such a body is not
# read here: Django's form parser spools its files, and the operation checks each file's size.
LARGE_UPLOADS: dict[str, Callable[[], int]] = {}


def _check_size(request: HttpRequest) -> None:
    """:raises RequestDataTooBig: a body larger than this request may send"""
    largest = None
    if request.content_type == "multipart/form-data":
        largest = next((limit for path, limit in LARGE_UPLOADS.items()
                        if request.path == path or request.path.startswith(path + "/")), None)
    if largest is None:
        request.body  # noqa: B018 - reading it enforces DATA_UPLOAD_MAX_MEMORY_SIZE
        return
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > largest():
        raise RequestDataTooBig("the upload is larger than this operation takes")


def guard(run):
    """
    Wrap every operation: count the client address and refuse an oversize body, before auth runs.

    The size check reads the body as Django does (Content-Length first, then the bytes actually
    received, which covers chunked uploads), so a huge body is refused without being parsed.
    """
    from apps.api import auth
    from apps.ops import limits

    @wraps(run)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            limits.check_address(address=auth.client_address(request), now=time.time())
            if request.method in ("POST", "PUT", "PATCH"):
                _check_size(request)
        except RequestDataTooBig:
            return error_response(PayloadTooLarge())
        except WaypointError as exc:
            return error_response(exc)
        return run(request, *args, **kwargs)

    return guarded


def json_errors(view):
    """Give the responses Django or ninja make outside any operation (405) the error shape."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and not response.get("Content-Type", "").startswith("application/json"):
            allow = response.get("Allow", "")
            response = JsonResponse(error_body("method_not_allowed", f"Use {allow}."), status=405)
            response["Allow"] = allow
        return response

    return wrapped


@csrf_exempt
def unknown_path(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return JsonResponse(error_body("not_found", "No such API path."), status=404)
