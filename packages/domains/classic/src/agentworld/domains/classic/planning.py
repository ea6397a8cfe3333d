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
