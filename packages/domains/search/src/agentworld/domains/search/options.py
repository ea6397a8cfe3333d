"""``SearchEnvOptions``: what ``agentworld collect --domain search --set KEY=VALUE`` may give
:class:`~agentworld.domains.search.env.SearchEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from agentworld.core.options import EnvOptions


class SearchEnvOptions(EnvOptions):
    """Options of the search domain's real environment.

    Attributes:
        world_seed: Seed of the corpus's fictional world (default: the domain's, 0); tasks
            of another world are refused at reset.
    """

    world_seed: int = 0
