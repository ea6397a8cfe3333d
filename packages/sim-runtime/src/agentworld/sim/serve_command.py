"""``agentworld serve``: the command serving a domain's envs over the OpenEnv protocol.

Registered by :mod:`agentworld.sim.plugin`; the server itself is :mod:`agentworld.sim.openenv`
(imported when the command runs: it needs the ``openenv`` extra).
"""

from typing import Annotated, Any


def register_serve(cli: Any) -> None:
    """Add the ``serve`` command to the typer app ``cli``."""
    import typer  # annotations below are evaluated here (no `from __future__ import annotations`)
    from agentworld.sim.serve_options import AllowHub, ApiKeyFile, Device, Dtype, Host, Port

    @cli.command("serve")
    def serve_cmd(
        domain: Annotated[str, typer.Option(help="Domain to serve (see `agentworld domains`).")],
        checkpoint: Annotated[
            str | None,
            typer.Option(
                "--model",
                "--checkpoint",
                help="World-model checkpoint directory: serve simulated envs (--checkpoint: "
                "the old name).",
            ),
        ] = None,
        real: Annotated[
            bool, typer.Option("--real", help="Serve the domain's real env instead.")
        ] = False,
        host: Host = "127.0.0.1",
        port: Port = 8000,
        max_sessions: Annotated[
            int, typer.Option(min=1, help="Most concurrent sessions (WebSocket and HTTP).")
        ] = 8,
        max_steps: Annotated[int, typer.Option(min=1, help="Simulated steps per episode.")] = 50,
        backend: Annotated[str, typer.Option(help="Sim backend loading the checkpoint.")] = "hf",
        temperature: Annotated[
            float, typer.Option(min=0, help="World-model sampling temperature (0: greedy).")
        ] = 0.0,
        seed: Annotated[int | None, typer.Option(help="World-model sampling seed.")] = None,
        max_new_tokens: Annotated[
            int, typer.Option(min=1, help="Generation limit per simulated step (tokens).")
        ] = 256,
        device: Device = "auto",
        dtype: Dtype = "auto",
        allow_hub: AllowHub = True,
        reward_source: Annotated[
            str | None,
            typer.Option(
                help="Simulated rewards: 'model', 'verifier' or 'none' (default: domain)."
            ),
        ] = None,
        on_parse_error: Annotated[
            str | None,
            typer.Option(help="Unparsed world-model answer: 'truncate' or 'retry'."),
        ] = None,
        tasks: Annotated[
            bool,
            typer.Option(
                "--tasks/--free-play",
                help="A reset gets the domain sampler's task for its seed (or free play).",
            ),
        ] = True,
        listed_tasks: Annotated[
            int, typer.Option(min=0, help="Tasks also offered by task_id (GET /tasks).")
        ] = 0,
        max_sessions_per_client: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Most HTTP sessions of one client (every loopback address is one client; "
                "default: no cap but a fair share of the slots).",
            ),
        ] = None,
        max_ws_per_client: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Most WebSocket sessions of one client (every loopback address is one "
                "client; default: no cap but a fair share of the slots).",
            ),
        ] = None,
        idle_timeout: Annotated[
            float,
            typer.Option(
                min=0.001,
                help="Seconds without a reset or step after which a session is closed "
                "(keep-alive and state messages do not count).",
            ),
        ] = 600.0,
        api_key: Annotated[
            str | None,
            typer.Option(
                help="The token every route but /health requires (default: a fresh one, "
                "printed at start). Visible in the process list: prefer the "
                "AGENTWORLD_API_KEY environment variable or --api-key-file.",
            ),
        ] = None,
        api_key_file: ApiKeyFile = None,
        no_auth: Annotated[
            bool,
            typer.Option(
                "--no-token",
                "--no-auth",
                help="Serve without a token: every local user and process (and, off loopback, "
                "every machine) that reaches the port can use it.",
            ),
        ] = False,
        allow_origin: Annotated[
            list[str] | None,
            typer.Option(
                metavar="ORIGIN",
                help="A browser origin (http(s)://HOST[:PORT]) whose pages may use the server "
                "besides its own; repeat for more. Other origins get 403.",
            ),
        ] = None,
    ) -> None:
        """Serve environments of a domain over the OpenEnv protocol (HTTP and WebSocket).

        Routes: /ws (one session per connection), /reset, /step, /state, /sessions, /mcp,
        /tasks, /health, /schema, /metadata. Needs the `openenv` extra. Every route but
        /health needs a token, even on loopback: AGENTWORLD_API_KEY, --api-key-file or
        --api-key, else a fresh one printed at start (--no-token serves it open: with --real
        every client gets a shell). Pages of other sites are refused (see --allow-origin).
        """
        from agentworld.sim.api_key_option import resolve_api_key
        from agentworld.sim.openenv.serve import build_app, serve
        from agentworld.sim.server.auth import check_exposure, new_token

        api_key = resolve_api_key(api_key, api_key_file, ("AGENTWORLD_API_KEY",))
        generated = api_key is None and not no_auth
        if generated:
            api_key = new_token()
        try:
            check_exposure(host, api_key, no_auth=no_auth)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--host") from None

        env_options: dict[str, Any] = {}
        load_options: dict[str, Any] = {}
        if not real:
            env_options["max_steps"] = max_steps
            for name, value in (
                ("reward_source", reward_source),
                ("on_parse_error", on_parse_error),
            ):
                if value is not None:
                    env_options[name] = value
            load_options = {
                "temperature": temperature,
                "seed": seed,
                "max_new_tokens": max_new_tokens,
                "device": device,
                "dtype": dtype,
                **({} if allow_hub else {"allow_hub": False}),
            }
        try:
            app = build_app(
                domain,
                checkpoint=checkpoint,
                real=real,
                backend=backend,
                load_options=load_options,
                env_options=env_options,
                max_sessions=max_sessions,
                tasks=tasks,
                num_listed_tasks=listed_tasks,
                api_key=api_key,
                max_sessions_per_client=max_sessions_per_client,
                max_ws_per_client=max_ws_per_client,
                idle_timeout_s=idle_timeout,
                allowed_origins=allow_origin or (),
            )
        except ValueError as error:
            raise typer.BadParameter(str(error)) from None
        serve(
            app, host=host, port=port, api_key=api_key, no_auth=no_auth, token_generated=generated
        )
