import unittest

from ledger.accounts import Account, InsufficientFunds, transfer


class AccountTests(unittest.TestCase):
    def test_deposit(self):
        """deposit adds to the balance and records the movement."""
        account = Account("a", balance=100)
        self.assertEqual(account.deposit(50), 150)
        self.assertEqual(account.history, [("deposit", 50)])

    def test_deposit_must_be_positive(self):
        """deposit rejects a zero or negative amount."""
        with self.assertRaises(ValueError):
            Account("a").deposit(0)

    def test_withdraw(self):
        """withdraw takes from the balance and records the movement."""
        account = Account("a", balance=100)
        self.assertEqual(account.withdraw(30), 70)
        self.assertEqual(account.history, [("withdraw", 30)])

    def test_withdraw_to_zero(self):
        """withdraw may empty the account exactly."""
        self.assertEqual(Account("a", balance=40).withdraw(40), 0)

    def test_overdraft_limit(self):
        """withdraw may go below zero down to the overdraft, not further."""
        account = Account("a", balance=10, overdraft=20)
        self.assertEqual(account.withdraw(30), -20)
        with self.assertRaises(InsufficientFunds):
            account.withdraw(1)

    def test_available(self):
        """available is the balance plus the overdraft."""
        self.assertEqual(Account("a", balance=10, overdraft=20).available(), 30)


class TransferTests(unittest.TestCase):
    def test_transfer(self):
        """transfer moves the amount between the accounts."""
        source, target = Account("s", balance=100), Account("t", balance=5)
        self.assertEqual(transfer(source, target, 60), (40, 65))

    def test_failed_transfer_changes_nothing(self):
        """a transfer beyond the funds raises and leaves both balances."""
        source, target = Account("s", balance=10), Account("t")
        with self.assertRaises(InsufficientFunds):
            transfer(source, target, 11)
        self.assertEqual((source.balance, target.balance), (10, 0))


if __name__ == "__main__":
    unittest.main()
