"""The words the arithmetic problems are made of: people (with their pronouns), objects, shop items, containers.

The generator draws from these tables and the renderers fill the templates with them; a problem stores the choices
(a name, an object word, indices of items and containers) in ``ArithProblem.slots``. Changing a table changes what a
config generates and renders: bump ``render.RENDER_VERSION`` with it (it is part of the model and sample cache keys).
"""

from __future__ import annotations

# Names with (subject, object, possessive) pronouns: 10 "she", 10 "he".
PRONOUNS: dict[str, tuple[str, str, str]] = {"she": ("she", "her", "her"), "he": ("he", "him", "his")}
NAMES: dict[str, str] = {
    "Mia": "she", "Leo": "he", "Ava": "she", "Ben": "he", "Zoe": "she", "Sam": "he", "Lily": "she",
    "Max": "he", "Emma": "she", "Noah": "he", "Ella": "she", "Omar": "he", "Ruby": "she", "Jack": "he",
    "Nina": "she", "Ivan": "he", "Rosa": "she", "Theo": "he", "Lena": "she", "Owen": "he",
}  # fmt: skip
OBJECTS: tuple[str, ...] = (
    "stickers", "marbles", "apples", "cookies", "pencils", "shells", "stamps", "cards", "beads", "buttons",
    "crayons", "oranges", "eggs", "books", "coins", "toys", "balloons", "flowers", "rocks", "ribbons",
)  # fmt: skip
# Shop items and containers as (singular, plural).
ITEMS: tuple[tuple[str, str], ...] = (
    ("pen", "pens"), ("notebook", "notebooks"), ("muffin", "muffins"), ("eraser", "erasers"),
    ("candle", "candles"), ("mug", "mugs"), ("kite", "kites"), ("bracelet", "bracelets"),
    ("puzzle", "puzzles"), ("magnet", "magnets"),
)  # fmt: skip
CONTAINERS: tuple[tuple[str, str], ...] = (
    ("box", "boxes"), ("bag", "bags"), ("basket", "baskets"), ("jar", "jars"), ("crate", "crates"),
    ("tray", "trays"),
)  # fmt: skip
