"""The API's operations once, for the synchronous and the asynchronous clients: each returns
what its transport's ``call`` returns — an answer, or a coroutine of one — parsed into the
generated model by ``_parsed``."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def _dump(model: BaseModel | dict[str, Any]) -> dict[str, Any]:
    if isinstance(model, BaseModel):
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return model


class Api:
    """Operations over a transport (``Transport`` or ``AsyncTransport``)."""

    def __init__(self, transport: Any):
        self._t = transport

    def _parsed(self, answer: Any, model: type[M] | None, field: str | None = None) -> Any:
        def parse(body: Any) -> Any:
            if field is not None:
                body = body[field]
            if model is None:
                return body
            if isinstance(body, list):
                return [model.model_validate(item) for item in body]
            return model.model_validate(body)

        if inspect.isawaitable(answer):
            async def later() -> Any:
                return parse(await answer)

            return later()
        return parse(answer)

    def _get(self, path: str, model: type[M] | None, field: str | None = None, **params: Any) -> Any:
        return self._parsed(self._t.call("GET", path, params=params), model, field)

    def _send(self, method: str, path: str, model: type[M] | None, body: Any = None, key: str | None = None) -> Any:
        json = _dump(body) if body is not None else None
        return self._parsed(self._t.call(method, path, json=json, key=key), model)
