import unittest

from calculator import add, average, subtract


class CalculatorTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_subtract(self):
        self.assertEqual(subtract(5, 3), 2)

    def test_average(self):
        self.assertEqual(average([1, 2, 3]), 2)

    def test_average_of_nothing_is_zero(self):
        self.assertEqual(average([]), 0)


if __name__ == "__main__":
    unittest.main()
