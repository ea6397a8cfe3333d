"""Accounts with a balance in cents, an overdraft limit and a history of movements."""


class InsufficientFunds(Exception):
    """A withdrawal larger than the balance plus the overdraft."""


class Account:
    """An account; ``overdraft`` is how far below zero the balance may go."""

    def __init__(self, name, balance=0, overdraft=0):
        self.name = name
        self.balance = balance
        self.overdraft = overdraft
        self.history = []

    def deposit(self, cents):
        """Add a positive amount; returns the new balance."""
        if cents <= 0:
            raise ValueError("a deposit must be positive")
        self.balance += cents
        self.history.append(("deposit", cents))
        return self.balance

    def withdraw(self, cents):
        """Take a positive amount out, within the overdraft; returns the new balance."""
        if cents <= 0:
            raise ValueError("a withdrawal must be positive")
        if self.balance - cents < -self.overdraft:
            raise InsufficientFunds(f"{self.name}: cannot withdraw {cents}")
        self.balance -= cents
        self.history.append(("withdraw", cents))
        return self.balance

    def available(self):
        """What can still be withdrawn: the balance plus the overdraft."""
        return self.balance + self.overdraft


def transfer(source, target, cents):
    """Move an amount from one account to another; returns both new balances."""
    source.withdraw(cents)
    target.deposit(cents)
    return source.balance, target.balance
