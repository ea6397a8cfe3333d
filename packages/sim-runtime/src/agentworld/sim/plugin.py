"""Plugin of ``agentworld-sim``: the ``hf``, ``openai`` and ``vllm`` sim backends and the
``serve-openai`` command (torch, the openai client, FastAPI and vLLM are imported lazily)."""

from typing import Annotated, Any

from agentworld.core.hookspecs import Register, hookimpl
from agentworld.sim.api_key_option import resolve_api_key


def _hf_backend() -> Any:
    """The ``hf`` backend; it needs the ``hf`` extra (torch, transformers).

    Raises:
        ModuleNotFoundError: torch or transformers is missing (the message names the extra).
    """
    try:
        from agentworld.sim.backends.hf import HFBackend
    except ModuleNotFoundError as e:
        missing = (e.name or "").split(".")[0]
        if missing not in ("torch", "transformers"):
            raise
        raise ModuleNotFoundError(
            f"the hf sim backend needs {missing}, which is not installed: "
            "pip install 'agentworld-sim[hf]' (serving a real environment needs neither)",
            name=e.name,
        ) from e
    return HFBackend()


def _openai_backend() -> Any:
    from agentworld.sim.backends.openai_client import OpenAIBackend

    return OpenAIBackend()


def _vllm_backend() -> Any:
    from agentworld.sim.backends.vllm import VLLMBackend

    return VLLMBackend()


@hookimpl
def register_sim_backends(register: Register) -> None:
    register("hf", _hf_backend)
    register("openai", _openai_backend)
    register("vllm", _vllm_backend)


@hookimpl
def register_commands(cli: Any) -> None:
    import typer  # annotations below are evaluated here (no `from __future__ import annotations`)
    from agentworld.sim.serve_options import AllowHub, ApiKeyFile, Device, Dtype, Host, Port

    @cli.command("serve-openai")
    def serve_openai_cmd(
        checkpoint: Annotated[
            str | None,
            typer.Argument(
                help="Checkpoint directory (or a hub id you pass); the old form of --model."
            ),
        ] = None,
        model: Annotated[
            str | None,
            typer.Option(help="Checkpoint directory (or a hub id you pass)."),
        ] = None,
        host: Host = "127.0.0.1",
        port: Port = 8000,
        backend: Annotated[
            str, typer.Option(help="Sim backend that loads the checkpoint (hf or vllm).")
        ] = "hf",
        served_model_name: Annotated[
            str | None, typer.Option(help="Model id clients send (default: CHECKPOINT as given).")
        ] = None,
        device: Device = "auto",
        dtype: Dtype = "auto",
        allow_hub: AllowHub = True,
        max_batch: Annotated[
            int, typer.Option(min=1, help="Most requests gathered into one generate call.")
        ] = 64,
        max_wait_ms: Annotated[
            float,
            typer.Option(min=0, help="Longest wait for more requests before a batch runs (ms)."),
        ] = 10.0,
        default_max_tokens: Annotated[
            int, typer.Option(min=1, help="Completion limit of requests that set none (tokens).")
        ] = 1024,
        api_key: Annotated[
            str | None,
            typer.Option(
                help="Require this bearer key on /v1/* requests (needed off loopback). "
                "Visible in the process list: prefer the AGENTWORLD_API_KEY environment "
                "variable (or AGENTWORLD_SERVE_API_KEY) or --api-key-file.",
            ),
        ] = None,
        api_key_file: ApiKeyFile = None,
        no_auth: Annotated[
            bool,
            typer.Option("--no-auth", help="Allow a non-loopback --host without an API key."),
        ] = False,
        max_body_bytes: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Largest request body (bytes); larger ones get 413 "
                "(default: 1 MiB or twice the prompt bound, whichever is larger).",
            ),
        ] = None,
        max_prompt_bytes: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Most bytes of message text; larger prompts get 413 before they are "
                "tokenised (default: the context length x --prompt-bytes-per-token).",
            ),
        ] = None,
        prompt_bytes_per_token: Annotated[
            float, typer.Option(min=0.1, help="Bytes allowed per context token (see above).")
        ] = 16.0,
        tokenize_workers: Annotated[
            int, typer.Option(min=1, help="Threads tokenising prompts (per lane: small, large).")
        ] = 2,
    ) -> None:
        """Serve a chat checkpoint over an OpenAI-compatible API.

        Routes: /v1/chat/completions, /v1/models, /health. Off loopback (--host 0.0.0.0)
        it needs an API key (AGENTWORLD_API_KEY, --api-key-file or --api-key) unless
        --no-auth is given.
        """
        from agentworld.sim.server.auth import check_exposure
        from agentworld.sim.server.openai_server import serve

        if (model is None) == (checkpoint is None):
            raise typer.BadParameter(
                "give the checkpoint once: --model DIR (or, the old way, a CHECKPOINT argument)",
                param_hint="--model",
            )
        checkpoint = model or checkpoint
        api_key = resolve_api_key(
            api_key, api_key_file, ("AGENTWORLD_API_KEY", "AGENTWORLD_SERVE_API_KEY")
        )
        try:
            check_exposure(host, api_key, no_auth=no_auth)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--host") from None
        if backend == "hf":  # a bad path fails here, before torch and the server load (~10 s)
            from agentworld.sim.backends.model_source import is_hub_source

            is_hub_source(checkpoint, allow_hub=allow_hub)
        serve(
            checkpoint,
            host=host,
            port=port,
            backend=backend,
            served_model_name=served_model_name,
            max_batch=max_batch,
            max_wait_s=max_wait_ms / 1000,
            default_max_tokens=default_max_tokens,
            api_key=api_key,
            max_body_bytes=max_body_bytes,
            max_prompt_bytes=max_prompt_bytes,
            prompt_bytes_per_token=prompt_bytes_per_token,
            tokenize_workers=tokenize_workers,
            no_auth=no_auth,
            device=device,
            dtype=dtype,
            **({} if allow_hub else {"allow_hub": False}),
        )

    from agentworld.sim.serve_command import register_serve

    register_serve(cli)
