"""Word lists for reading entity mentions in chat: words that open a sentence without naming anything, pet nouns,
words that end the names of organisations and places, kinship words used as names. Written from general knowledge
of English chat, not from any dataset."""

from __future__ import annotations

# Capitalized words that open sentences without naming anything: interjections, greetings, sentence adverbs and
# one-word replies. At the start of a sentence they alone never warrant NER, and a span they open loses them
# ("Morning Danny" -> "Danny", "Mostly Python" -> "Python", "Poor Biscuit" -> "Biscuit").
OPENERS = frozenset({
    "absolutely", "actually", "admittedly", "afternoon", "agreed", "ah", "aha", "alright", "amazing", "anyhow",
    "anyway", "anyways", "apparently", "aw", "aww", "awesome", "basically", "brilliant", "bye", "cheers",
    "classic", "clearly", "congrats", "congratulations", "cool", "correct", "cute", "darn", "definitely", "dude",
    "eh", "evening", "exactly", "fantastic", "finally", "fine", "frankly", "fun", "funny", "glad", "gonna",
    "good", "gosh", "great", "haha", "hahaha", "hehe", "hello", "hey", "hi", "hmm", "honestly", "hopefully",
    "however", "huh", "indeed", "interesting", "ironically", "jeez", "kudos", "lol", "lovely", "luckily",
    "maybe", "meanwhile", "mhm", "morning", "mostly", "naturally", "nice", "night", "nope", "noted", "obviously",
    "oh", "ok", "okay", "omg", "oof", "oops", "ouch", "perfect", "personally", "please", "poor", "probably",
    "real", "really", "right", "sadly", "seriously", "silly", "smart", "so", "sorry", "sounds", "speaking",
    "sure", "surely", "thank", "thanks", "thankfully", "totally", "true", "truly", "ugh", "um", "umm",
    "unfortunately", "wanna", "weird", "welcome", "well", "whoa", "whoops", "wow", "yay", "yeah", "yep", "yes",
    "yikes", "yum",
})

# Animals people keep and name, and common breeds, so that "our dog Biscuit" or "a beagle mix called Mochi" names
# a pet.
PET_NOUNS = frozenset({
    "dog", "doggo", "pup", "puppy", "cat", "kitten", "kitty", "parrot", "parakeet", "budgie", "cockatiel", "bird",
    "rabbit", "bunny", "hamster", "gerbil", "guinea pig", "ferret", "horse", "pony", "donkey", "goat", "pig",
    "chicken", "hen", "rooster", "duck", "fish", "goldfish", "turtle", "tortoise", "snake", "lizard", "gecko",
    "iguana", "rat", "mouse", "hedgehog", "retriever", "labrador", "lab", "poodle", "labradoodle", "goldendoodle",
    "doodle", "beagle", "husky", "corgi", "terrier", "bulldog", "pug", "dachshund", "shepherd", "collie",
    "spaniel", "chihuahua", "greyhound", "whippet", "schnauzer", "rottweiler", "pitbull", "pit bull", "mutt",
    "tabby", "calico",
})

# Last words of organisation names: a span spaCy tags PERSON that ends with one ("Seattle Humane", "Acme Labs")
# names an organisation. Words that are also common surnames (Bell, Church, Banks) are left out.
ORG_END_WORDS = frozenset({
    "inc", "incorporated", "llc", "ltd", "corp", "corporation", "co", "company", "group", "labs", "lab",
    "laboratories", "hospital", "clinic", "university", "college", "school", "academy", "institute", "society",
    "humane", "rescue", "shelter", "foundation", "association", "museum", "library", "bakery", "cafe", "café",
    "restaurant", "brewery", "pharmacy", "studio", "studios", "records", "press", "partners", "systems",
    "solutions", "technologies", "analytics", "consulting", "bros", "club", "gallery", "theater", "theatre",
    "center", "centre", "bank",
})

# Last words of place names that are not surnames: a PERSON span ending with one ("Ruston Avenue") is a place.
PLACE_END_WORDS = frozenset({
    "street", "avenue", "ave", "road", "boulevard", "blvd", "square", "plaza", "lake", "mountain", "mountains",
    "beach", "island", "islands", "valley", "canyon", "falls", "trail", "bridge", "airport", "station", "heights",
    "county", "province", "peninsula",
})

# Last words of the names of parks and gardens. They are surnames too ("Helen Park"), so they end a place's name
# only after a word that is not a given name.
PARK_WORDS = frozenset({"park", "parks", "garden", "gardens"})

# Generic words that may follow an organisation's or a place's name without changing what it names: "Northwind"
# is "Northwind Labs", "Seattle Children's" is "Seattle Children's Hospital", "Epic" is "Epic Systems", "Fernwood"
# is "Fernwood Park".
DESIGNATORS = ORG_END_WORDS | PARK_WORDS | frozenset({
    "brothers", "market", "zoo", "stadium", "arena", "mall", "airport", "station", "hotel",
})

# Kinship words that people capitalize to use as a name ("Mom cried", "Dad's speech").
KIN_NAMES = frozenset({
    "Mom", "Mum", "Mommy", "Mummy", "Mama", "Dad", "Daddy", "Papa", "Grandma", "Grandpa", "Granny", "Nana",
    "Grandad", "Granddad", "Grandmother", "Grandfather",
})
# Kinship words that precede a name as a title ("Aunt Rosemary", "Grandpa Walter").
KIN_TITLES = frozenset({
    "Aunt", "Auntie", "Uncle", "Grandma", "Grandpa", "Granny", "Nana", "Cousin", "Grandmother", "Grandfather",
})
# Honorifics that precede a person's name.
HONORIFICS = frozenset({"Dr", "Mr", "Mrs", "Ms", "Mx", "Miss", "Prof", "Professor", "Sir", "Dame"})

# Capitalized words that a pattern must not take for a name.
CALENDAR = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march",
    "april", "may", "june", "july", "august", "september", "october", "november", "december", "today",
    "tomorrow", "yesterday", "christmas", "easter", "thanksgiving",
})
