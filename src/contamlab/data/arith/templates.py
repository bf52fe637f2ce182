"""The sentence templates of the synthetic arithmetic domains (``arith`` base style, ``arith_pq`` paraphrase style).

Data only: :mod:`~contamlab.data.arith.render` renders the problems with these templates. Changing a template changes
what a config renders: bump ``render.RENDER_VERSION`` with it (it is part of the model and sample cache keys).
"""

from __future__ import annotations

# ----------------------------------------------------------------------------------------------------------
# Templates. Keys are "<family>.<piece>"; "q." pieces are question sentences, "s." pieces solution lines.
# Fields: N name, s/S subject pronoun (lower/capitalised), o object pronoun, p/P possessive, F a second
# person, obj plural object; numbers by name; calc = "a op b = <<a op b=r>>r" (base), ann = "<<a op b=r>>r"
# (pq). Every template of a question piece shows exactly that piece's numbers, each once; a pq question piece
# shows them in the order of the base template it rephrases, so both styles give the same number sequence.
# ----------------------------------------------------------------------------------------------------------

BASE: dict[str, tuple[str, ...]] = {
    # chain
    "chain.q.intro": ("{N} has {x} {obj}.", "{N} owns {x} {obj}.", "{N} starts the day with {x} {obj}."),
    "chain.q.+": (
        "{S} buys {n} more.",
        "Then {s} finds {n} more {obj}.",
        "{F} gives {o} {n} more {obj}.",
        "{S} wins {n} more {obj} at a game.",
    ),
    "chain.q.-": (
        "{S} gives {n} {obj} to {F}.",
        "Then {s} loses {n} of them.",
        "{S} uses {n} {obj} for a project.",
    ),
    "chain.q.*": (
        "{S} ends up with {n} times as many {obj} as before.",
        "After a trade, {s} has {n} times as many {obj} as {s} had.",
        "{F} gives {o} enough {obj} to make {p} pile {n} times as big.",
    ),
    "chain.q./": (
        "{S} splits {p} {obj} equally into {n} piles and keeps one pile.",
        "{S} divides the {obj} into {n} equal groups and keeps only one group.",
        "{S} sorts {p} {obj} into {n} equal piles and gives away all but one pile.",
    ),
    "chain.q.end": (
        "How many {obj} does {N} have now?",
        "How many {obj} does {N} end up with?",
        "How many {obj} does {N} have at the end?",
    ),
    "chain.s.+": (
        "{N} gets {n} more, so {s} has {calc} {obj}.",
        "Adding {n} gives {calc} {obj}.",
        "With {n} more, {N} has {calc} {obj}.",
    ),
    "chain.s.-": (
        "{N} has {n} fewer, so {s} has {calc} {obj}.",
        "Taking away {n} leaves {calc} {obj}.",
        "After {n} are gone, {N} has {calc} {obj}.",
    ),
    "chain.s.*": (
        "{n} times as many is {calc} {obj}.",
        "Multiplying by {n}, {N} has {calc} {obj}.",
        "{N} now has {calc} {obj}.",
    ),
    "chain.s./": (
        "One of {n} equal piles is {calc} {obj}.",
        "Dividing by {n} leaves {N} with {calc} {obj}.",
        "Each pile has {calc} {obj}, and {N} keeps one.",
    ),
    # shop
    "shop.q.intro": (
        "{N} buys {a} {item} for ${price} each.",
        "At the store, {N} picks up {a} {item} that cost ${price} each.",
        "{N} wants {a} {item}, and each one costs ${price}.",
    ),
    "shop.q.second": (
        "{S} also buys {b} {item2} for ${price2} each.",
        "Then {s} adds {b} {item2} at ${price2} each.",
        "{S} also gets {b} {item2} that cost ${price2} each.",
    ),
    "shop.q.bill": (
        "{S} pays with a ${bill} bill.",
        "{S} hands the cashier ${bill}.",
        "{S} gives the clerk ${bill}.",
    ),
    "shop.q.end1": (
        "How much does {N} spend?",
        "How many dollars does {N} pay?",
        "How much do the {item} cost in all?",
    ),
    "shop.q.end3": (
        "How much does {N} spend in total?",
        "How many dollars does {N} pay altogether?",
        "What is the total cost of the {item} and the {item2}?",
    ),
    "shop.q.change": (
        "How much change does {N} get back?",
        "How many dollars of change does {N} receive?",
        "How much money does {N} get back?",
    ),
    "shop.s.*": (
        "{a} {item} cost {calc} dollars.",
        "The {item} cost {calc} dollars.",
        "{N} pays {calc} dollars for the {item}.",
    ),
    "shop.s.+": (
        "Together that is {calc} dollars.",
        "The total cost is {calc} dollars.",
        "In all, {N} spends {calc} dollars.",
    ),
    "shop.s.-": (
        "The change is {calc} dollars.",
        "{N} gets back {calc} dollars.",
        "So {N} receives {calc} dollars in change.",
    ),
    # groups
    "groups.q.intro": (
        "{N} has {a} {cont} with {b} {obj} in each {cont1}.",
        "{N} fills {a} {cont} with {b} {obj} each.",
        "{N} packs {b} {obj} into each of {a} {cont}.",
    ),
    "groups.q.+": (
        "{S} finds {c} more {obj}.",
        "{F} gives {o} {c} extra {obj}.",
        "Then {s} buys {c} more {obj}.",
    ),
    "groups.q.-": ("{S} gives away {c} {obj}.", "{S} loses {c} of the {obj}.", "Then {F} takes {c} {obj}."),
    "groups.q./": (
        "{S} shares all of {p} {obj} equally among {c} friends.",
        "{S} splits the {obj} evenly between {c} friends.",
        "Then {s} divides the {obj} equally among {c} friends.",
    ),
    "groups.q.end1": (
        "How many {obj} does {N} have?",
        "How many {obj} are there in all?",
        "How many {obj} are in the {cont}?",
    ),
    "groups.q.end": (
        "How many {obj} does {N} have now?",
        "How many {obj} does {N} end up with?",
        "How many {obj} does {N} have at the end?",
    ),
    "groups.q.end4": (
        "How many {obj} does each friend get?",
        "How many {obj} does one friend receive?",
        "How many {obj} end up with each friend?",
    ),
    "groups.s.*": (
        "{N} starts with {calc} {obj}.",
        "{a} {cont} of {b} {obj} make {calc} {obj}.",
        "There are {calc} {obj} in the {cont}.",
    ),
    "groups.s.+": (
        "With {c} more, {s} has {calc} {obj}.",
        "Adding {c} gives {calc} {obj}.",
        "Now {N} has {calc} {obj}.",
    ),
    "groups.s.-": (
        "Without those {c}, {s} has {calc} {obj}.",
        "Taking away {c} leaves {calc} {obj}.",
        "Now {N} has {calc} {obj}.",
    ),
    "groups.s./": (
        "Each friend gets {calc} {obj}.",
        "Sharing among {c} friends gives {calc} {obj} each.",
        "One friend's share is {calc} {obj}.",
    ),
    # compare
    "compare.q.intro": ("{A} has {a} {obj}.", "{A} collects {a} {obj}.", "{A} owns {a} {obj}."),
    "compare.q.+": (
        "{B} has {d} more {obj} than {A}.",
        "{B} owns {d} more {obj} than {A} does.",
        "{B} has {d} {obj} more than {A}.",
    ),
    "compare.q.-": (
        "{B} has {d} fewer {obj} than {A}.",
        "{B} owns {d} fewer {obj} than {A} does.",
        "{B} has {d} {obj} fewer than {A}.",
    ),
    "compare.q.*": (
        "{C} has {m} times as many {obj} as {B}.",
        "{C} owns {m} times as many {obj} as {B} does.",
        "{C} collects {m} times the number of {obj} that {B} has.",
    ),
    "compare.q.end1": (
        "How many {obj} does {B} have?",
        "How many {obj} does {B} own?",
        "What number of {obj} does {B} have?",
    ),
    "compare.q.end2": (
        "How many {obj} does {C} have?",
        "How many {obj} does {C} own?",
        "What number of {obj} does {C} have?",
    ),
    "compare.q.end3": (
        "How many {obj} do {B} and {C} have together?",
        "How many {obj} do {B} and {C} have in all?",
        "What is the total number of {obj} that {B} and {C} have?",
    ),
    "compare.q.end4": (
        "How many {obj} do the three of them have in total?",
        "How many {obj} do {A}, {B} and {C} have altogether?",
        "How many {obj} do all three children have?",
    ),
    "compare.s.+": (
        "{B} has {calc} {obj}.",
        "{B} has {d} more, so {B} has {calc} {obj}.",
        "{B} owns {calc} {obj}.",
    ),
    "compare.s.-": (
        "{B} has {calc} {obj}.",
        "{B} has {d} fewer, so {B} has {calc} {obj}.",
        "{B} owns {calc} {obj}.",
    ),
    "compare.s.*": (
        "{C} has {calc} {obj}.",
        "{C} has {m} times as many, so {calc} {obj}.",
        "{C} owns {calc} {obj}.",
    ),
    "compare.s.sum3": (
        "Together they have {calc} {obj}.",
        "{B} and {C} have {calc} {obj}.",
        "In all, that is {calc} {obj}.",
    ),
    "compare.s.sum4a": (
        "{A} and {B} have {calc} {obj}.",
        "Together {A} and {B} have {calc} {obj}.",
        "The first two have {calc} {obj}.",
    ),
    "compare.s.sum4b": (
        "Adding {C} gives {calc} {obj}.",
        "All three have {calc} {obj}.",
        "In total they have {calc} {obj}.",
    ),
}

# GSM8K-PQ-style rephrasings of the base question pieces: ``PQ_QUESTIONS[key][i]`` holds the paraphrases of
# ``BASE[key][i]``. Each keeps the base sentence's facts in their order, its people (the protagonist stays the
# subject) and its numbers in the same order, but rewords it (verbs, nouns, structure). A pq question piece is
# drawn from the paraphrases of the base template that the same problem uses at that position.
PQ_QUESTIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    # chain
    "chain.q.intro": (
        ("{N} keeps a supply of {x} {obj}.", "{N} is holding a total of {x} {obj}."),
        ("{N} is the proud owner of {x} {obj}.", "{N} possesses a set of {x} {obj}."),
        ("{N} begins the morning holding {x} {obj}.", "At sunrise, {N} is carrying {x} {obj}."),
    ),
    "chain.q.+": (
        ("{S} purchases an additional {n}.", "{S} goes shopping and comes home with another {n}."),
        ("After that, {s} comes across another {n} {obj}.", "Next, {s} discovers {n} additional {obj}."),
        ("{F} adds another {n} {obj} to {p} pile.", "{F} presents {o} with {n} additional {obj}."),
        ("{S} earns another {n} {obj} as a game prize.", "{S} takes home an extra {n} {obj} from a game."),
    ),
    "chain.q.-": (
        ("{S} hands {n} of the {obj} over to {F}.", "{S} parts with {n} of {p} {obj}, handing them to {F}."),
        ("After that, {s} misplaces {n} of the {obj}.", "Later on, {s} can no longer find {n} of them."),
        ("{S} spends {n} {obj} on a craft project.", "{S} takes {n} {obj} to complete a school project."),
    ),
    "chain.q.*": (
        (
            "{S} manages to multiply {p} stock of {obj} by {n}.",
            "{S} now holds {n} times the number of {obj} {s} had earlier.",
        ),
        (
            "{S} makes a swap and comes away with {n} times {p} earlier number of {obj}.",
            "Following a trade, {s} holds {n} times {p} previous count of {obj}.",
        ),
        (
            "{F} hands {o} just enough {obj} for {p} pile to grow to {n} times its size.",
            "{F} supplies {o} with enough {obj} to multiply the size of {p} pile by {n}.",
        ),
    ),
    "chain.q./": (
        (
            "{S} divides {p} {obj} into {n} piles of the same size and holds on to just one of them.",
            "{S} separates {p} {obj} into {n} even piles, keeping only a single pile for {o}self.",
        ),
        (
            "{S} breaks the {obj} up into {n} groups of matching size and retains a single group.",
            "{S} arranges the {obj} in {n} same-sized groups and holds on to just one.",
        ),
        (
            "{S} arranges {p} {obj} into {n} piles of matching size, then hands every pile out except one.",
            "{S} organizes {p} {obj} in {n} even piles and donates each pile but one.",
        ),
    ),
    "chain.q.end": (
        ("What is the number of {obj} in {N}'s possession at this point?", "Currently, what is {N}'s total of {obj}?"),
        ("What is the final number of {obj} that {N} holds?", "In the end, what total of {obj} is left with {N}?"),
        ("When everything is done, what number of {obj} does {N} hold?", "What is {N}'s final count of {obj}?"),
    ),
    # shop
    "shop.q.intro": (
        (
            "{N} purchases {a} {item}, paying ${price} for every one.",
            "{N} picks out {a} {item} at a price of ${price} apiece.",
        ),
        (
            "While shopping, {N} grabs {a} {item} priced at ${price} apiece.",
            "In the shop, {N} selects {a} {item} with a price tag of ${price} per {item1}.",
        ),
        (
            "{N} would like to get {a} {item}, which sell for ${price} apiece.",
            "{N} is hoping to purchase {a} {item}, priced at ${price} per {item1}.",
        ),
    ),
    "shop.q.second": (
        (
            "In addition, {s} purchases {b} {item2} priced at ${price2} apiece.",
            "On top of that, {s} gets hold of {b} {item2} at ${price2} per {item21}.",
        ),
        (
            "Next, {s} puts {b} {item2} into the cart, paying ${price2} for every one.",
            "After that, {s} includes {b} {item2} with a price of ${price2} apiece.",
        ),
        (
            "{S} picks up {b} {item2} as well, with a price tag of ${price2} per {item21}.",
            "Besides that, {s} grabs {b} {item2} selling for ${price2} apiece.",
        ),
    ),
    "shop.q.bill": (
        ("{S} covers the purchase using a ${bill} note.", "To settle up, {s} hands over a ${bill} note."),
        ("{S} passes ${bill} across the counter to the cashier.", "{S} offers the checkout worker ${bill}."),
        ("{S} puts ${bill} into the sales clerk's hand.", "{S} passes ${bill} over to the store clerk."),
    ),
    "shop.q.end1": (
        ("What sum of money does {N} pay out?", "What is the amount that {N} spends?"),
        ("What is the dollar amount {N} has to pay?", "In dollars, what does {N} hand over for the purchase?"),
        ("What is the combined price of the {item}?", "What is the total price of all the {item}?"),
    ),
    "shop.q.end3": (
        ("What is the overall amount {N} spends?", "Altogether, what sum does {N} pay out?"),
        ("In dollars, what is the full amount {N} pays?", "What is the total dollar amount that {N} hands over?"),
        (
            "How much do the {item} and the {item2} come to when added together?",
            "Combined, what is the price of the {item} plus the {item2}?",
        ),
    ),
    "shop.q.change": (
        ("What amount of change does {N} receive?", "What is the change that {N} collects?"),
        ("In dollars, what change does {N} collect?", "What is the amount of change, in dollars, that {N} is given?"),
        ("What sum of money is returned to {N}?", "What amount of money does {N} receive in return?"),
    ),
    # groups
    "groups.q.intro": (
        (
            "{N} owns {a} {cont}, and every {cont1} holds {b} {obj}.",
            "{N} keeps {a} {cont} whose contents are {b} {obj} apiece.",
        ),
        (
            "{N} loads {a} {cont}, putting {b} {obj} into every one.",
            "{N} stocks {a} {cont}, placing {b} {obj} inside every single one.",
        ),
        (
            "{N} places {b} {obj} in every one of {a} {cont}.",
            "{N} puts {b} {obj} inside every {cont1}, using {a} {cont} in total.",
        ),
    ),
    "groups.q.+": (
        ("{S} comes across an extra {c} {obj}.", "{S} then discovers another {c} {obj}."),
        ("{F} passes another {c} {obj} along to {o}.", "{F} presents {o} with {c} additional {obj}."),
        ("After that, {s} purchases an additional {c} {obj}.", "Next, {s} goes shopping for another {c} {obj}."),
    ),
    "groups.q.-": (
        ("{S} hands out {c} of the {obj} to others.", "{S} lets go of {c} {obj}."),
        ("{S} can no longer find {c} of {p} {obj}.", "{S} accidentally misplaces {c} of {p} {obj}."),
        ("After that, {F} walks off with {c} of the {obj}.", "Next, {F} grabs {c} of the {obj}."),
    ),
    "groups.q./": (
        (
            "{S} divides every one of {p} {obj} evenly between {c} friends.",
            "{S} hands out the whole lot of {p} {obj} to {c} friends in matching portions.",
        ),
        (
            "{S} distributes the {obj} in fair parts to {c} friends.",
            "{S} gives the {obj} to {c} friends so that each one gets the same portion.",
        ),
        (
            "Finally, {s} hands the {obj} out to {c} friends so that everyone gets the same amount.",
            "Next, {s} deals out the {obj} in fair shares to {c} friends.",
        ),
    ),
    "groups.q.end1": (
        ("What is the total number of {obj} that {N} owns?", "What is {N}'s total count of {obj}?"),
        ("What is the overall number of {obj}?", "Altogether, what is the count of {obj}?"),
        ("What number of {obj} do the {cont} hold?", "Counting every {cont1}, what is the number of {obj} inside?"),
    ),
    "groups.q.end": (
        ("At this point, what is the number of {obj} that {N} holds?", "What is {N}'s current total of {obj}?"),
        ("What number of {obj} is {N} left with in the end?", "In the end, what is {N}'s count of {obj}?"),
        (
            "Once all of this is over, what is the number of {obj} {N} holds?",
            "What final total of {obj} belongs to {N}?",
        ),
    ),
    "groups.q.end4": (
        ("What is the number of {obj} that every friend receives?", "What size is each friend's share of {obj}?"),
        ("What is a single friend's portion of {obj}?", "What number of {obj} goes to one friend?"),
        (
            "What count of {obj} does every friend walk away with?",
            "In the end, what is the number of {obj} in each friend's hands?",
        ),
    ),
    # compare
    "compare.q.intro": (
        ("{A} keeps a stash of {a} {obj}.", "{A} is holding a total of {a} {obj}."),
        ("{A} has gathered a set of {a} {obj}.", "{A} puts together a collection of {a} {obj}."),
        ("{A} is the owner of {a} {obj}.", "{A} possesses a group of {a} {obj}."),
    ),
    "compare.q.+": (
        ("{B} holds an extra {d} {obj} compared with {A}.", "{B} keeps {d} {obj} beyond the amount {A} holds."),
        ("{B} is the owner of {d} additional {obj} compared to {A}.", "{B} possesses {d} {obj} over {A}'s total."),
        ("{B} holds {d} extra {obj} relative to {A}.", "{B} keeps {d} {obj} in excess of {A}'s count."),
    ),
    "compare.q.-": (
        ("{B} is short {d} {obj} compared with {A}.", "{B} is {d} {obj} behind {A}."),
        ("{B} possesses {d} {obj} less than {A} is holding.", "{B} falls {d} {obj} short of {A}'s count."),
        ("{B} is {d} {obj} short of what {A} has.", "{B} comes up {d} {obj} short when compared with {A}."),
    ),
    "compare.q.*": (
        ("{C} keeps {m} times {B}'s amount of {obj}.", "{C} holds a pile of {obj} {m} times the size of {B}'s."),
        (
            "{C} possesses a quantity of {obj} equal to {m} times {B}'s.",
            "{C} holds {m} times the {obj} in {B}'s possession.",
        ),
        ("{C} gathers {m} times {B}'s total of {obj}.", "{C} gathers a pile of {obj} {m} times as big as {B}'s."),
    ),
    "compare.q.end1": (
        ("What is the number of {obj} that {B} holds?", "What is {B}'s total of {obj}?"),
        ("What quantity of {obj} belongs to {B}?", "What count of {obj} is in {B}'s possession?"),
        ("How large is {B}'s stash of {obj}?", "Can you find out how many {obj} {B} possesses?"),
    ),
    "compare.q.end2": (
        ("What is the number of {obj} that {C} holds?", "What is {C}'s total of {obj}?"),
        ("What quantity of {obj} belongs to {C}?", "What count of {obj} is in {C}'s possession?"),
        ("How large is {C}'s stash of {obj}?", "Can you find out how many {obj} {C} possesses?"),
    ),
    "compare.q.end3": (
        (
            "Between {B} and {C}, what is the size of their joint stash of {obj}?",
            "Between them, what total of {obj} do {B} and {C} hold?",
        ),
        (
            "What is the sum of the {obj} owned by {B} and {C}?",
            "Taken together, what count of {obj} do {B} and {C} possess?",
        ),
        ("How many {obj} are held by {B} and {C} combined?", "If {B} and {C} pool their {obj}, how many are there?"),
    ),
    "compare.q.end4": (
        (
            "What is the combined number of {obj} held by all three?",
            "Taken together, what count of {obj} do the three possess?",
        ),
        (
            "What is the sum of the {obj} owned by {A}, {B} and {C}?",
            "If {A}, {B} and {C} pool their {obj}, how many are there?",
        ),
        (
            "What total of {obj} do the three kids hold?",
            "What is the overall number of {obj} belonging to the three children?",
        ),
    ),
}

# The pq solution lines (a terser style than the base ones), drawn like the base templates.
PQ_SOLUTIONS: dict[str, tuple[str, ...]] = {
    # chain
    "chain.s.+": ("Adding {n} to {a} makes {ann}.", "Increasing by {n}: {ann}.", "The new total is {ann}."),
    "chain.s.-": (
        "Removing {n} from {a} leaves {ann}.",
        "Decreasing by {n}: {ann}.",
        "What remains is {ann}.",
    ),
    "chain.s.*": (
        "Multiplying {a} by {n} makes {ann}.",
        "Scaling up by {n}: {ann}.",
        "The larger collection has {ann}.",
    ),
    "chain.s./": (
        "Dividing {a} by {n} makes {ann}.",
        "One part out of {n}: {ann}.",
        "The part that is kept has {ann}.",
    ),
    # shop
    "shop.s.*": (
        "The {item} come to {ann} dollars.",
        "Cost of the {item}: {ann} dollars.",
        "Buying {a} at {price} dollars each costs {ann} dollars.",
    ),
    "shop.s.+": (
        "Both kinds together: {ann} dollars.",
        "Adding the two costs gives {ann} dollars.",
        "The whole order is {ann} dollars.",
    ),
    "shop.s.-": (
        "Money returned: {ann} dollars.",
        "Taking the cost from {bill} gives {ann} dollars.",
        "What comes back is {ann} dollars.",
    ),
    # groups
    "groups.s.*": (
        "At the start there are {ann} {obj}.",
        "The {cont} hold {ann} {obj} in total.",
        "Counting every {cont1}: {ann} {obj}.",
    ),
    "groups.s.+": (
        "After adding {c}: {ann}.",
        "The pile grows to {ann}.",
        "With the extra ones there are {ann}.",
    ),
    "groups.s.-": (
        "After removing {c}: {ann}.",
        "The pile drops to {ann}.",
        "Without those ones there are {ann}.",
    ),
    "groups.s./": (
        "One share out of {c}: {ann}.",
        "Each friend's part is {ann}.",
        "Dividing evenly gives {ann} per friend.",
    ),
    # compare
    "compare.s.+": ("{B}'s count: {ann}.", "Going {d} above {A}: {ann}.", "{B} owns {ann}."),
    "compare.s.-": ("{B}'s count: {ann}.", "Going {d} below {A}: {ann}.", "{B} owns {ann}."),
    "compare.s.*": ("{C}'s count: {ann}.", "{m} times {B}'s amount: {ann}.", "{C} owns {ann}."),
    "compare.s.sum3": (
        "Combined: {ann}.",
        "{B} and {C} together: {ann}.",
        "Putting them together gives {ann}.",
    ),
    "compare.s.sum4a": (
        "{A} and {B} combined: {ann}.",
        "The first two together: {ann}.",
        "Putting {A} and {B} together gives {ann}.",
    ),
    "compare.s.sum4b": (
        "Including {C}: {ann}.",
        "All three combined: {ann}.",
        "Adding the third collection gives {ann}.",
    ),
}

PQ: dict[str, tuple[str, ...]] = {
    **{key: tuple(t for group in groups for t in group) for key, groups in PQ_QUESTIONS.items()},
    **PQ_SOLUTIONS,
}

TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {"base": BASE, "pq": PQ}
