"""Optimal action tables from the known dynamics ``env.unwrapped.P`` (value iteration).

For every state, the action that maximises the probability of reaching the
goal (FrozenLake ``G``, CliffWalking ``G``, Taxi's delivery), and among
those, ties within ``1e-9`` broken by the discounted (``gamma = 0.99``)
success value, i.e. the quickest. On deterministic variants this is a
shortest path (the discounted value is ``gamma ** (steps - 1)``). Value
iteration as in Sutton & Barto, *Reinforcement Learning* (2nd ed.), sec. 4.4.
"""

from __future__ import annotations

import functools

import numpy as np
from agentworld.domains.classic.variants import Kind, Variant, get_variant

GAMMA = 0.99
TOL = 1e-12
MAX_ITERATIONS = 100_000


def _is_success(variant: Variant, reward: float, done: bool) -> bool:
    # FrozenLake's goal pays 1, Taxi's delivery 20; CliffWalking ends only at its goal (-1).
    return done and (reward > 0 or variant.kind is Kind.CLIFFWALKING)


def _iterate(success: np.ndarray, moves: np.ndarray, gamma: float) -> np.ndarray:
    """Q values ``[states, actions]`` of ``Q = success + gamma * moves @ max_a Q``."""
    value = np.zeros(moves.shape[0])
    for _ in range(MAX_ITERATIONS):
        q = success + gamma * moves @ value
        new = q.max(axis=1)
        if np.abs(new - value).max() < TOL:
            break
        value = new
    return q


def expert_actions(variant: Variant) -> tuple[int, ...]:
    """Best Gymnasium action index per state (``[num_states]``), cached per variant."""
    return _expert_actions(variant.name)


def success_probability(variant: Variant) -> tuple[float, ...]:
    """Optimal probability of reaching the goal from each state, ``[num_states]`` in [0, 1]."""
    return _tables(variant.name)[1]


@functools.cache
def _expert_actions(name: str) -> tuple[int, ...]:
    return _tables(name)[0]


@functools.cache
def _tables(name: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    from agentworld.domains.classic.env import make_gym_env

    variant = get_variant(name)
    table = make_gym_env(variant).unwrapped.P
    num_states, num_actions = len(table), len(table[0])
    success = np.zeros((num_states, num_actions))
    moves = np.zeros((num_states, num_actions, num_states))
    for s, row in table.items():
        for a, outcomes in row.items():
            for p, s2, reward, done in outcomes:
                if _is_success(variant, reward, done):
                    success[s, a] += p
                elif not done:
                    moves[s, a, s2] += p
    q = _iterate(success, moves, 1.0)
    q_fast = _iterate(success, moves, GAMMA)
    best = q.max(axis=1, keepdims=True)
    q_fast = np.where(q >= best - 1e-9, q_fast, -np.inf)
    actions = tuple(int(a) for a in q_fast.argmax(axis=1))
    return actions, tuple(float(v) for v in best[:, 0])


def route(variant: Variant, start: int, target: int) -> list[int] | None:
    """Action indices of a shortest path from state ``start`` to ``target`` that never ends
    the episode on the way, following each action's most likely next state (breadth-first
    search over ``env.unwrapped.P``); ``None`` when ``target`` cannot be reached so."""
    successors = _successors(variant.name)
    parents: dict[int, tuple[int, int]] = {start: (start, -1)}
    frontier = [start]
    while frontier and target not in parents:
        nxt = []
        for s in frontier:
            for a, s2 in enumerate(successors[s]):
                if s2 is not None and s2 not in parents:
                    parents[s2] = (s, a)
                    nxt.append(s2)
        frontier = nxt
    if target not in parents:
        return None
    path, s = [], target
    while s != start:
        s, a = parents[s]
        path.append(a)
    return path[::-1]


def reachable(variant: Variant, start: int) -> list[int]:
    """States :func:`route` can reach from ``start``, in increasing order."""
    successors = _successors(variant.name)
    seen, frontier = {start}, [start]
    while frontier:
        frontier = [
            s2 for s in frontier for s2 in successors[s] if s2 is not None and s2 not in seen
        ]
        seen.update(frontier)
    return sorted(seen)


@functools.cache
def _successors(name: str) -> tuple[tuple[int | None, ...], ...]:
    """Most likely next state per (state, action); ``None`` where that transition ends the
    episode (a hole, the goal, a delivery)."""
    from agentworld.domains.classic.env import make_gym_env

    table = make_gym_env(get_variant(name)).unwrapped.P
    out = []
    for s in range(len(table)):
        row = []
        for a in range(len(table[s])):
            p, s2, _reward, done = max(table[s][a], key=lambda outcome: outcome[0])
            row.append(None if done or s2 == s else s2)
        out.append(tuple(row))
    return tuple(out)
