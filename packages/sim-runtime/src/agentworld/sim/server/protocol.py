"""Wire format of the OpenAI Chat Completions API (the non-streaming subset we serve).

Field names, defaults and ranges follow the OpenAI API reference
(``POST /v1/chat/completions``, ``GET /v1/models``); ``top_k`` is the vLLM /
SGLang extension. Unknown request fields are accepted and ignored, as vLLM does.
Every number is bounded here, at the edge, so that a request no engine could run
(``seed: 1e30``, ``max_tokens: 1e30``) is refused with 400 on its own instead of
failing in the batched generation call: seeds fit a signed 64-bit integer (what
``torch.Generator.manual_seed`` takes, with room for ``seed + choice``), counts and
token limits fit a signed 32-bit integer. ``stop`` holds at most :data:`MAX_STOP_STRINGS`
strings (the OpenAI API's limit) of at most :data:`MAX_STOP_CHARS` characters each, so that
checking them stays cheap whatever a request sends.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_STOP_STRINGS = 4
"""Most strings in ``stop`` (the OpenAI API's limit)."""
MAX_STOP_CHARS = 256
"""Longest stop string (characters)."""


class TextPart(BaseModel):
    """One ``{"type": "text", "text": ...}`` part of a message's content."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    """One chat message; ``developer`` is OpenAI's newer name for ``system``."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None

    def as_template_message(self) -> dict[str, str]:
        """``{"role", "content"}`` as chat templates take it (text parts joined)."""
        content = self.content
        if isinstance(content, list):
            content = "".join(part.text for part in content)
        role = "system" if self.role == "developer" else self.role
        return {"role": role, "content": content or ""}


class ChatCompletionRequest(BaseModel):
    """Body of ``POST /v1/chat/completions``.

    ``max_completion_tokens`` (OpenAI's newer name) wins over ``max_tokens``;
    ``None`` for both means "the rest of the context, capped by the server".
    """

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    n: int = Field(1, ge=1, le=INT32_MAX)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=-1, le=INT32_MAX)
    max_tokens: int | None = Field(None, ge=1, le=INT32_MAX)
    max_completion_tokens: int | None = Field(None, ge=1, le=INT32_MAX)
    stop: str | list[str] | None = None
    seed: int | None = Field(None, ge=INT64_MIN, le=INT64_MAX)
    stream: bool = False
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    user: str | None = None

    @field_validator("stop")
    @classmethod
    def _check_stop(cls, stop: str | list[str] | None) -> str | list[str] | None:
        stops = [stop] if isinstance(stop, str) else stop or []
        if len(stops) > MAX_STOP_STRINGS:
            raise ValueError(f"stop takes at most {MAX_STOP_STRINGS} strings, got {len(stops)}")
        for s in stops:
            if not s:
                raise ValueError("stop strings must not be empty")
            if len(s) > MAX_STOP_CHARS:
                raise ValueError(
                    f"each stop string has at most {MAX_STOP_CHARS} characters, got one of {len(s)}"
                )
        return stop

    @model_validator(mode="after")
    def _check(self) -> ChatCompletionRequest:
        if self.stream:
            raise ValueError("stream=true is not supported by this server; send stream=false")
        if self.top_logprobs:
            raise ValueError("top_logprobs is not supported; only logprobs of sampled tokens")
        return self

    @property
    def stop_list(self) -> list[str]:
        """``stop`` as a list (a single string becomes a one-item list)."""
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    @property
    def token_limit(self) -> int | None:
        """The requested completion limit (tokens), ``None`` when unset."""
        return self.max_completion_tokens or self.max_tokens


class TokenLogprob(BaseModel):
    """Log-probability of one sampled token (``top_logprobs`` always empty)."""

    token: str
    logprob: float
    bytes: list[int]
    top_logprobs: list[Any] = Field(default_factory=list)


class ChoiceLogprobs(BaseModel):
    content: list[TokenLogprob]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length"]
    logprobs: ChoiceLogprobs | None = None


class PromptTokensDetails(BaseModel):
    """``usage.prompt_tokens_details`` as OpenAI's API (and vLLM and SGLang) report it:
    ``cached_tokens`` of the prompt were served from the prefix cache, not recomputed."""

    cached_tokens: int


class Usage(BaseModel):
    """Token counts: the prompt once per request, completions summed over choices; the
    prompt's cached part in ``prompt_tokens_details``."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails | None = None


class ChatCompletion(BaseModel):
    """Body of a successful ``POST /v1/chat/completions`` response."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    #: OpenAI: "the backend configuration that the model runs with"; here a random id per
    #: server process, so a client behind a router can tell which replica answered.
    system_fingerprint: str | None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "agentworld"
    max_model_len: int | None = None


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorResponse(BaseModel):
    """``{"error": {"message", "type", "param", "code"}}`` as the OpenAI API returns it."""

    error: ErrorBody
