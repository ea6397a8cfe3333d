"""Plugin of ``agentworld-sim``: the ``hf``, ``openai`` and ``vllm`` sim backends and the
``serve-openai`` command (torch, the openai client, FastAPI and vLLM are imported lazily)."""

from typing import Annotated, Any

from agentworld.core.hookspecs import Register, hookimpl


def _hf_backend() -> Any:
    from agentworld.sim.backends.hf import HFBackend

    return HFBackend()


def _openai_backend() -> Any:
    from agentworld.sim.backends.openai import OpenAIBackend

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

    @cli.command("serve-openai")
    def serve_openai_cmd(
        checkpoint: Annotated[
            str, typer.Argument(help="Checkpoint directory (or a hub id you pass).")
        ],
        host: Annotated[
            str, typer.Option(help="Interface to bind; loopback unless you mean to expose it.")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = 8000,
        backend: Annotated[
            str, typer.Option(help="Sim backend that loads the checkpoint (hf or vllm).")
        ] = "hf",
        served_model_name: Annotated[
            str | None, typer.Option(help="Model id clients send (default: CHECKPOINT as given).")
        ] = None,
        device: Annotated[
            str, typer.Option(help="hf backend: 'auto', 'cpu', 'cuda', ...")
        ] = "auto",
        dtype: Annotated[
            str, typer.Option(help="'auto', 'float32', 'bfloat16' or 'float16'.")
        ] = "auto",
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
                envvar="AGENTWORLD_SERVE_API_KEY", help="Require this bearer key on /v1/* requests."
            ),
        ] = None,
    ) -> None:
        """Serve a chat checkpoint over an OpenAI-compatible API.

        Routes: /v1/chat/completions, /v1/models, /health.
        """
        from agentworld.sim.server.openai import serve

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
            device=device,
            dtype=dtype,
        )
