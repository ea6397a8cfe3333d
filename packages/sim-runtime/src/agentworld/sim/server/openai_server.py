"""An OpenAI-compatible HTTP server (FastAPI + uvicorn) over a loaded checkpoint.

Routes: ``GET /health``, ``GET /v1/models``, ``POST /v1/chat/completions``
(non-streaming; ``n``, ``temperature``, ``top_p``, ``top_k``, ``max_tokens`` /
``max_completion_tokens``, ``stop``, ``seed``, ``logprobs``; ``usage`` token counts, and
the prompt tokens served from the prefix cache in ``usage.prompt_tokens_details.cached_tokens``
when the backend counts them). It generates the raw assistant text, so it serves any chat
checkpoint: a world model for the ``openai`` sim backend, or an LLM judge. Concurrent
requests are gathered into one batched ``generate`` call (:class:`Batcher`).
Errors are ``{"error": {"message", "type", "param", "code"}}`` with 400 for
invalid requests, 401 for a missing or wrong key (when the server has one),
404 for an unknown model or route, 413 for a body over ``max_body_bytes`` (refused
before it is read) or messages over the prompt byte bound (refused before they are
tokenised, :mod:`.admission`), 500 for a failed generation, 503 when too many large prompts
wait for the tokenizer. Prompts are rendered and tokenised in worker threads, never on the
event loop. Every request is validated on its own
before it joins a batch (:mod:`.protocol` bounds every number), and a batch whose
generation fails is retried request by request, so one bad request never fails the
requests batched with it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from agentworld.sim.server.admission import (
    PROMPT_BYTES_PER_TOKEN,
    PromptBound,
    PromptTooLarge,
    TokenizerBusy,
    TokenizerPool,
)
from agentworld.sim.server.auth import UNAUTHORIZED, bearer_matches, check_exposure
from agentworld.sim.batcher import Batcher
from agentworld.sim.server.chat import (
    ChatModel,
    ChatRequest,
    ChatResult,
    PreparedChat,
    RequestError,
    chat_model_for,
)
from agentworld.sim.server.browser import BrowserGuardMiddleware
from agentworld.sim.server.limits import BodyLimitMiddleware
from agentworld.sim.server.slow_clients import uvicorn_options
from agentworld.sim.server.protocol import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionRequest,
    Choice,
    ChoiceLogprobs,
    ErrorBody,
    ErrorResponse,
    ModelCard,
    ModelList,
    PromptTokensDetails,
    TokenLogprob,
    Usage,
)

logger = logging.getLogger(__name__)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "invalid_request_error",
    503: "server_error",
}
MAX_BODY_BYTES = 1024 * 1024
"""Smallest default body bound (bytes); it grows to twice the prompt bound for long contexts."""


def body_limit(max_body_bytes: int | None, prompt: PromptBound) -> int:
    """The request body bound (bytes): ``max_body_bytes`` when given, else the larger of
    :data:`MAX_BODY_BYTES` and twice the prompt bound (room for JSON escapes and fields)."""
    if max_body_bytes is not None:
        return max_body_bytes
    return max(MAX_BODY_BYTES, 2 * prompt.max_bytes)


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}`` for HTTP ``status``."""
    codes = {
        401: "invalid_api_key",
        404: "model_not_found" if param == "model" else "not_found",
        413: "request_too_large",
        503: "server_busy",
    }
    error = ErrorBody(
        message=message,
        type=_ERROR_TYPES.get(status, "server_error"),
        param=param,
        code=codes.get(status),
    )
    return ErrorResponse(error=error).model_dump()


def error_response(status: int, message: str, param: str | None = None) -> JSONResponse:
    """An OpenAI-style error body with HTTP ``status``."""
    return JSONResponse(error_body(status, message, param), status_code=status)


def _validation_message(error: RequestValidationError) -> tuple[str, str | None]:
    parts, param = [], None
    for item in error.errors():
        loc = [x for x in item.get("loc", ()) if x != "body"]
        if loc and isinstance(loc[0], str):
            param = param or loc[0]
        where = ".".join(str(x) for x in loc if isinstance(x, str))
        parts.append(f"{where}: {item.get('msg')}" if where else str(item.get("msg")))
    return "invalid request: " + "; ".join(parts), param


def _to_chat_request(body: ChatCompletionRequest) -> ChatRequest:
    return ChatRequest(
        messages=[m.as_template_message() for m in body.messages],
        max_tokens=body.token_limit,
        n=body.n,
        temperature=1.0 if body.temperature is None else body.temperature,
        top_p=1.0 if body.top_p is None else body.top_p,
        top_k=body.top_k or 0,
        seed=body.seed,
        stop=tuple(body.stop_list),
        logprobs=body.logprobs,
    )


def _completion(model_name: str, result: ChatResult, fingerprint: str) -> ChatCompletion:
    choices = []
    for index, choice in enumerate(result.choices):
        logprobs = None
        if choice.logprobs is not None:
            content = [
                TokenLogprob(token=t, logprob=v, bytes=list(t.encode())) for t, v in choice.logprobs
            ]
            logprobs = ChoiceLogprobs(content=content)
        choices.append(
            Choice(
                index=index,
                message=AssistantMessage(content=choice.text),
                finish_reason=choice.finish_reason,
                logprobs=logprobs,
            )
        )
    completion_tokens = sum(c.num_tokens for c in result.choices)
    usage = Usage(
        prompt_tokens=result.prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=result.prompt_tokens + completion_tokens,
        prompt_tokens_details=None
        if result.cached_tokens is None
        else PromptTokensDetails(cached_tokens=result.cached_tokens),
    )
    return ChatCompletion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        model=model_name,
        choices=choices,
        usage=usage,
        system_fingerprint=fingerprint,
    )


def create_app(
    chat_model: ChatModel,
    model_name: str,
    *,
    max_batch: int = 64,
    max_wait_s: float = 0.01,
    max_n: int = 16,
    api_key: str | None = None,
    max_body_bytes: int | None = None,
    max_prompt_bytes: int | None = None,
    prompt_bytes_per_token: float = PROMPT_BYTES_PER_TOKEN,
    tokenize_workers: int = 2,
    max_tokenize_waiting: int = 16,
) -> FastAPI:
    """The FastAPI application serving ``chat_model`` under the name ``model_name``.

    Args:
        chat_model: What generates (see :func:`agentworld.sim.server.chat.chat_model_for`).
        model_name: The id listed by ``/v1/models``; requests naming another get 404.
        max_batch: Most requests gathered into one ``generate`` call.
        max_wait_s: Longest wait for more requests before a partial batch runs (seconds).
        max_n: Largest ``n`` (choices per request) accepted.
        api_key: When set, ``/v1/*`` requests must send ``Authorization: Bearer <api_key>``.
        max_body_bytes: Largest request body accepted (bytes); larger ones get 413. ``None``:
            see :func:`body_limit`.
        max_prompt_bytes: Most UTF-8 bytes of message text; larger prompts get 413 before
            they are tokenised. ``None``: ``chat_model.max_context * prompt_bytes_per_token``.
        prompt_bytes_per_token: Bytes allowed per context token for that default.
        tokenize_workers: Threads tokenising prompts, per lane (small and large prompts).
        max_tokenize_waiting: Most large prompts queued or tokenising; more get 503.

    Raises:
        ValueError: A bound out of range.
    """
    prompt_bound = PromptBound.derive(
        chat_model.max_context,
        max_prompt_bytes=max_prompt_bytes,
        bytes_per_token=prompt_bytes_per_token,
        fallback_bytes=max_body_bytes or MAX_BODY_BYTES,
    )
    pool = TokenizerPool(workers=tokenize_workers, max_waiting=max_tokenize_waiting)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        pool.close()

    app = FastAPI(title="agentworld OpenAI-compatible server", lifespan=lifespan)
    app.state.prompt_bound, app.state.tokenizer_pool = prompt_bound, pool
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=body_limit(max_body_bytes, prompt_bound),
        error_body=lambda message: error_body(413, message),
    )
    # outermost: a page of another site gets 403, a non-JSON POST 415 (sim.server.browser)
    app.add_middleware(BrowserGuardMiddleware, allowed_origins=())
    batcher: Batcher[PreparedChat, ChatResult] = Batcher(
        chat_model.generate, max_batch=max_batch, max_wait_s=max_wait_s
    )
    app.state.batcher = batcher
    created = int(time.time())
    fingerprint = f"agentworld-{uuid.uuid4().hex[:16]}"  # this server: which replica answered

    def check_key(request: Request) -> None:
        if api_key is not None and not bearer_matches(request.headers, api_key):
            raise HTTPException(401, UNAUTHORIZED)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        message, param = _validation_message(error)
        return error_response(400, message, param)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, error: HTTPException) -> JSONResponse:
        return error_response(error.status_code, str(error.detail))

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models", dependencies=[Depends(check_key)])
    async def models() -> ModelList:
        card = ModelCard(id=model_name, created=created, max_model_len=chat_model.max_context)
        return ModelList(data=[card])

    @app.post("/v1/chat/completions", response_model=None, dependencies=[Depends(check_key)])
    async def chat_completions(body: ChatCompletionRequest) -> ChatCompletion | JSONResponse:
        if body.model != model_name:
            message = f"the model {body.model!r} does not exist; this server has {model_name!r}"
            return error_response(404, message, "model")
        if body.n > max_n:
            return error_response(400, f"n must be at most {max_n}, got {body.n}", "n")
        request = _to_chat_request(body)
        try:
            size = prompt_bound.check(request.messages)
            prepared = await pool.run(lambda: chat_model.prepare(request), size)
        except PromptTooLarge as error:
            return error_response(413, str(error), "messages")
        except TokenizerBusy as error:
            return error_response(503, str(error))
        except RequestError as error:
            return error_response(400, str(error), error.param)
        try:
            result = await batcher.submit(prepared)
        except Exception as error:  # noqa: BLE001 -- reported to the client as a 500
            logger.exception("generation failed")
            return error_response(500, f"generation failed: {type(error).__name__}: {error}")
        if result.error is not None:
            return error_response(400, result.error)
        return _completion(model_name, result, fingerprint)

    return app


def serve(
    checkpoint: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    backend: str = "hf",
    served_model_name: str | None = None,
    max_batch: int = 64,
    max_wait_s: float = 0.01,
    default_max_tokens: int = 1024,
    api_key: str | None = None,
    max_body_bytes: int | None = None,
    max_prompt_bytes: int | None = None,
    prompt_bytes_per_token: float = PROMPT_BYTES_PER_TOKEN,
    tokenize_workers: int = 2,
    no_auth: bool = False,
    **load_options: Any,
) -> None:
    """Load ``checkpoint`` with sim backend ``backend`` and serve it until interrupted.

    ``load_options`` go to the backend's ``load`` (``device``, ``dtype``, ...). With
    ``api_key``, clients must send it as a bearer token. A ``host`` other than loopback
    needs ``api_key`` or ``no_auth`` (see :mod:`agentworld.sim.server.auth`).
    The model is listed under ``served_model_name`` (default: ``checkpoint`` as given).
    ``max_body_bytes``, ``max_prompt_bytes``, ``prompt_bytes_per_token`` and
    ``tokenize_workers`` bound requests as :func:`create_app` describes.
    Slow clients are cut off (:mod:`agentworld.sim.server.slow_clients`): request headers
    must arrive within 10 s, idle keep-alive connections close after 5 s.

    Raises:
        agentworld.core.plugins.UnknownPluginError: ``backend`` is not installed.
        ValueError: The backend's world model cannot generate raw chat completions, or
            ``host`` is not loopback and there is neither ``api_key`` nor ``no_auth``.
    """
    from agentworld.core import plugins

    check_exposure(host, api_key, no_auth=no_auth)
    if backend == "openai":
        raise ValueError("the 'openai' backend is a client of a server; serve with 'hf' or 'vllm'")
    world_model = plugins.get_sim_backend(backend).load(checkpoint, **load_options)
    chat_model = chat_model_for(world_model, default_max_tokens=default_max_tokens)
    app = create_app(
        chat_model,
        served_model_name or checkpoint,
        max_batch=max_batch,
        max_wait_s=max_wait_s,
        api_key=api_key,
        max_body_bytes=max_body_bytes,
        max_prompt_bytes=max_prompt_bytes,
        prompt_bytes_per_token=prompt_bytes_per_token,
        tokenize_workers=tokenize_workers,
    )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="info",
        timeout_graceful_shutdown=10,
        **uvicorn_options(),  # slow clients: header deadline, keep-alive, header size
    )
