"""Decoupled RL: an LM agent trained inside a world model, measured on the real environment
(issue 34). ``rewards``: where a simulated episode's reward comes from; ``judge``: the judge
source, a chat model behind an OpenAI-compatible endpoint; ``anchor``: re-anchoring simulated
episodes on the real environment (the mitigation); ``replay``: the true outcome of simulated
episodes, by replaying their actions in the real environment; ``evaluate``: greedy rollouts
of a policy, success in the simulator against the real one."""
