"""ledger: amounts in cents, accounts and spending reports."""

__version__ = "1.0.0"
