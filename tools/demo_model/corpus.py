"""The demo model's training text: little stories and chat dialogues from a grammar.

Everything here is written for this project: the word lists, the sentence patterns and the
plots. A story picks a hero (a child or an animal with a name), a place, a thing and a friend,
then one of several plots; every slot has a few phrasings, so the stories repeat in shape but
not word for word. Chat dialogues use the Zephyr turn format (see CHAT_TEMPLATE) and answer
requests such as "Tell me a story about a cat." with a story about that hero.

All randomness comes from one random.Random(seed), so a seed gives the same corpus on every
Python 3 (random's algorithms for choice/shuffle/random are stable across versions).
"""

import random
import re

GIRLS = ["Lily", "Mia", "Anna", "Sue", "Zoe", "Ella", "Lucy", "Amy", "Rose", "Kate",
         "Emma", "Sara", "Nina", "Ruby", "Jane", "Molly", "Daisy", "Grace"]
BOYS = ["Tom", "Ben", "Max", "Sam", "Tim", "Leo", "Jack", "Finn", "Joe", "Dan",
        "Bob", "Ned", "Oscar", "Toby", "Luke", "Pete", "Jim", "Noah"]
ANIMALS = ["cat", "dog", "bird", "fox", "rabbit", "bear", "duck", "frog", "mouse", "owl",
           "pig", "cow", "horse", "lion", "turtle", "sheep", "goat", "squirrel", "puppy", "kitten"]
KIDS = {"she": "girl", "he": "boy"}
TRAITS = ["little", "small", "happy", "brave", "shy", "kind", "curious", "sleepy", "funny",
          "friendly", "clever", "gentle"]
# (where one lives, where one plays)
PLACES = [("in a big green forest", "in the forest"), ("in a garden full of flowers", "in the garden"),
          ("near a sunny park", "in the park"), ("on a quiet farm", "on the farm"),
          ("next to a little pond", "by the pond"), ("in a small village", "in the village"),
          ("on top of a round hill", "on the hill"), ("in a wide meadow", "in the meadow"),
          ("by the warm beach", "on the beach"), ("near a slow river", "by the river")]
THINGS = ["red ball", "blue kite", "shiny stone", "little boat", "yellow hat", "old book",
          "green box", "soft blanket", "wooden drum", "big apple", "pretty flower",
          "silver key", "toy car", "warm scarf", "small bell"]
HIDING = ["under a big rock", "behind the old tree", "in the tall grass", "under a pile of leaves",
          "next to the fence", "inside a hollow log", "under the bench", "near the water"]
FOODS = [("a cake", "cake", "was"), ("cookies", "cookies", "were"), ("soup", "soup", "was"),
         ("bread", "bread", "was"), ("a pie", "pie", "was"), ("pancakes", "pancakes", "were")]
COLORS_SKY = ["The sky was blue", "The sun was warm", "The wind was soft", "The birds were singing"]
FEELINGS_BAD = ["sad", "worried", "scared", "upset"]
FEELINGS_GOOD = ["happy", "glad", "proud", "excited"]


def cap(text):
    return text[0].upper() + text[1:]


class Hero:
    """A story character: a name, a pronoun and a kind ("cat", "girl")."""

    def __init__(self, rng, kind=None, name=None):
        self.pronoun = rng.choice(["she", "he"])
        if name is not None:
            self.pronoun = "she" if name in GIRLS else "he"
        self.name = name or rng.choice(GIRLS if self.pronoun == "she" else BOYS)
        if kind is None:
            kind = rng.choice(ANIMALS) if rng.random() < 0.7 else KIDS[self.pronoun]
        self.kind = kind
        self.trait = rng.choice(TRAITS)

    @property
    def his(self):
        return "her" if self.pronoun == "she" else "his"

    @property
    def him(self):
        return "her" if self.pronoun == "she" else "him"


def article(word):
    return "an" if word[0] in "aeiou" else "a"


def opening(rng, hero, place):
    a = article(hero.trait)
    he = cap(hero.pronoun)
    return rng.choice([
        f"Once upon a time, there was {a} {hero.trait} {hero.kind} named {hero.name}. {he} lived {place[0]}.",
        f"Once upon a time, {a} {hero.trait} {hero.kind} named {hero.name} lived {place[0]}.",
        f"Once upon a time, far away {place[0]}, there lived {a} {hero.trait} {hero.kind}. {cap(hero.his)} name was {hero.name}.",
        f"One sunny morning, {a} {hero.trait} {hero.kind} named {hero.name} woke up {place[0]}.",
        f"The {hero.kind} was called {hero.name}. {he} was {a} {hero.trait} {hero.kind} and lived {place[0]}.",
        f"{hero.name} was {a} {hero.trait} {hero.kind}. {he} lived {place[0]} with {hero.his} family.",
    ])


def plot_lost_thing(rng, hero, friend, place, thing):
    where = rng.choice(HIDING)
    bad = rng.choice(FEELINGS_BAD)
    good = rng.choice(FEELINGS_GOOD)
    return [
        rng.choice([f"{hero.name} had {article(thing)} {thing}. {cap(hero.pronoun)} loved it very much.",
                    f"{hero.name} loved to play with {hero.his} {thing} every day."]),
        rng.choice([f"One day, {hero.name} could not find the {thing}.",
                    f"But one day, the {thing} was gone!"]),
        f"{hero.name} felt {bad}. {cap(hero.pronoun)} looked everywhere, but the {thing} was not there.",
        rng.choice([f"Then {hero.name} met {friend.name} the {friend.kind}. \"Why are you {bad}?\" asked {friend.name}.",
                    f"Soon {friend.name} the {friend.kind} came by and asked, \"What is wrong, {hero.name}?\""]),
        f"\"I lost my {thing},\" said {hero.name}. \"I will help you,\" said {friend.name}.",
        f"They looked together. At last, {friend.name} found the {thing} {where}.",
        rng.choice([f"{hero.name} was so {good}. \"Thank you, {friend.name}!\" {hero.pronoun} said.",
                    f"\"Thank you, {friend.name}!\" said {hero.name}. {cap(hero.pronoun)} gave {friend.name} a big hug."]),
        rng.choice([f"From that day on, {hero.name} and {friend.name} were best friends.",
                    f"They played with the {thing} until the sun went down.",
                    f"{hero.name} learned that friends help each other."]),
    ]


def plot_found_thing(rng, hero, friend, place, thing):
    good = rng.choice(FEELINGS_GOOD)
    return [
        rng.choice([f"One day, {hero.name} went for a walk {place[1]}.",
                    f"{rng.choice(COLORS_SKY)}, so {hero.name} went out to play {place[1]}."]),
        f"{cap(hero.pronoun)} saw something under a tree. It was {article(thing)} {thing}!",
        f"{hero.name} was very {good}. \"What a nice {thing},\" {hero.pronoun} said.",
        f"Then {hero.name} saw {friend.name} the {friend.kind}. {friend.name} looked sad because {friend.pronoun} had no toys.",
        rng.choice([f"{hero.name} wanted to keep the {thing}, but {hero.pronoun} thought about {friend.name}.",
                    f"{hero.name} had an idea."]),
        f"\"Let's play with it together,\" said {hero.name}. {friend.name} smiled a big smile.",
        rng.choice([f"They played all day and had lots of fun.",
                    f"They laughed and played until it was time to go home."]),
        rng.choice([f"{hero.name} learned that sharing makes everyone happy.",
                    f"Sharing the {thing} was more fun than playing alone."]),
    ]


def plot_brave(rng, hero, friend, place, thing):
    goal, fear = rng.choice([
        ("climb the big tree", "it was very tall"),
        ("swim in the pond", "the water looked deep"),
        ("cross the old bridge", "the bridge was shaking"),
        ("go into the dark cave", "it was very dark"),
        ("fly the kite on the hill", "the wind was strong"),
        ("sing a song for everyone", "there were so many friends watching"),
    ])
    return [
        f"{hero.name} wanted to {goal}. But {hero.pronoun} was scared, because {fear}.",
        rng.choice([f"Every day {hero.pronoun} looked at it and said, \"Maybe tomorrow.\"",
                    f"{cap(hero.pronoun)} sat down and felt a little sad."]),
        f"One day, {friend.name} the {friend.kind} came to see {hero.him}.",
        f"\"Don't be scared,\" said {friend.name}. \"I will be with you. We can do it together.\"",
        rng.choice([f"{hero.name} took a deep breath. {cap(hero.pronoun)} went slowly, one step at a time.",
                    f"{hero.name} held {friend.name}'s hand and started to try."]),
        f"And {hero.pronoun} did it! {hero.name} was able to {goal}.",
        rng.choice([f"{hero.name} felt very proud. \"I did it!\" {hero.pronoun} shouted.",
                    f"{friend.name} cheered, and {hero.name} laughed with joy."]),
        rng.choice([f"{hero.name} learned that being brave is easier with a friend.",
                    f"From that day on, {hero.name} was not scared anymore."]),
    ]


def plot_rain(rng, hero, friend, place, thing):
    return [
        f"One day, {hero.name} and {friend.name} the {friend.kind} were playing with {article(thing)} {thing} {place[1]}.",
        rng.choice(["Suddenly, big dark clouds came. It started to rain.",
                    "Then the sky turned gray, and rain began to fall."]),
        f"\"Oh no!\" said {friend.name}. \"We will get wet!\"",
        rng.choice([f"{hero.name} looked around and saw a big tree. \"Come, we can stay under the tree,\" {hero.pronoun} said.",
                    f"{hero.name} saw a small house nearby. \"Let's run to the house,\" {hero.pronoun} said."]),
        "They ran fast and stayed dry. They sat close together and listened to the rain.",
        "After a while, the rain stopped and the sun came out. There was a big rainbow in the sky!",
        f"\"Look, a rainbow!\" said {hero.name}. They were very happy.",
        rng.choice([f"{hero.name} and {friend.name} played with the {thing} again until dinner time.",
                    "It was the best day ever."]),
    ]


def plot_cook(rng, hero, friend, place, thing):
    food, food_name, verb = rng.choice(FOODS)
    who = rng.choice(["mom", "dad", "grandma", "grandpa"])
    return [
        f"Today was {hero.his} {who}'s birthday. {hero.name} wanted to make {who} happy.",
        f"\"I will make {food}!\" said {hero.name}. {cap(hero.pronoun)} asked {friend.name} the {friend.kind} to help.",
        f"They got a big bowl. They put in flour, milk and eggs. {friend.name} stirred and stirred.",
        rng.choice([f"Oops! Some flour fell on {hero.name}'s nose. They both laughed.",
                    f"The kitchen was a big mess, but they did not stop."]),
        f"Soon the {food_name} {verb} ready. {'They' if verb == 'were' else 'It'} smelled so good.",
        f"When {who} came home, {hero.name} said, \"Happy birthday!\"",
        rng.choice([f"{cap(who)} smiled and gave {hero.name} a big hug. \"This is the best gift,\" {who} said.",
                    f"{cap(who)} was so happy. They all ate the {food_name} together."]),
        rng.choice([f"{hero.name} learned that making others happy feels good.",
                    "It was a happy day for everyone."]),
    ]


def plot_way_home(rng, hero, friend, place, thing):
    return [
        f"One day, {hero.name} went far away from home to look for {article(thing)} {thing}.",
        f"{cap(hero.pronoun)} walked and walked. Soon the sun went down, and {hero.name} did not know the way home.",
        f"{hero.name} was scared. {cap(hero.pronoun)} sat down and began to cry.",
        f"Then {hero.pronoun} heard a voice. It was {friend.name} the {friend.kind}. \"Are you lost?\" asked {friend.name}.",
        f"\"Yes,\" said {hero.name}. \"I want to go home.\" \"I know the way,\" said {friend.name}. \"Follow me.\"",
        rng.choice(["They walked past the big tree and over the little hill.",
                    "They walked along the river and past the old fence."]),
        f"At last, {hero.name} saw {hero.his} home. {cap(hero.his)} family was waiting at the door.",
        rng.choice([f"\"Thank you, {friend.name}!\" said {hero.name}. \"You are a good friend.\"",
                    f"{hero.name} gave {friend.name} a big hug and said thank you."]),
    ]


def plot_race(rng, hero, friend, place, thing):
    return [
        f"{hero.name} and {friend.name} the {friend.kind} liked to run and play {place[1]}.",
        f"One day, {friend.name} said, \"Let's have a race to the big tree!\"",
        f"\"Ready, set, go!\" They ran as fast as they could.",
        f"{friend.name} was in front, but then {friend.pronoun} fell down and hurt {friend.his} leg.",
        f"{hero.name} stopped running. {cap(hero.pronoun)} went back to help {friend.name} get up.",
        f"\"You could have won,\" said {friend.name}. \"Helping you is more important,\" said {hero.name}.",
        "They walked to the big tree together, side by side.",
        rng.choice([f"{hero.name} learned that a good friend is better than winning.",
                    "They both won, because they were together."]),
    ]


PLOTS = [plot_lost_thing, plot_found_thing, plot_brave, plot_rain, plot_cook, plot_way_home, plot_race]


def make_story(rng, hero=None):
    """One story (a few sentences, one paragraph) about `hero` or a random one."""
    hero = hero or Hero(rng)
    friend = Hero(rng)
    while friend.name == hero.name:
        friend = Hero(rng)
    if friend.kind in ("girl", "boy"):  # "Tom the boy" reads oddly: friends are animals
        friend.kind = rng.choice(ANIMALS)
    place = rng.choice(PLACES)
    thing = rng.choice(THINGS)
    sentences = [opening(rng, hero, place)] + rng.choice(PLOTS)(rng, hero, friend, place, thing)
    if rng.random() < 0.3:
        sentences.append("The end.")
    return " ".join(sentences)


# ---- chat ----------------------------------------------------------------------------------

SYSTEM_PROMPTS = [
    "You are a friendly storyteller.",
    "You are a helpful assistant who tells short stories for children.",
    "You tell kind little stories.",
    "You are a story bot. Answer with a short story.",
]


def story_request(rng):
    """A user message asking for a story, and the hero the story must have."""
    kind = rng.choice(ANIMALS + ["girl", "boy"])
    pronoun = "she" if kind == "girl" else "he" if kind == "boy" else None
    name = None
    r = rng.random()
    if r < 0.25:
        name = rng.choice(GIRLS if pronoun == "she" else BOYS if pronoun == "he" else GIRLS + BOYS)
        what = f"{article(kind)} {kind} named {name}"
    else:
        what = f"{article(kind)} {kind}"
    message = rng.choice([
        f"Tell me a story about {what}.",
        f"Can you tell me a story about {what}?",
        f"Please tell me a short story about {what}.",
        f"I want a story about {what}.",
        f"Write a story about {what}.",
        f"Tell me a bedtime story about {what}.",
        f"Story about {what}, please!",
    ])
    hero = Hero(rng, kind=kind, name=name)
    if pronoun:
        hero.pronoun = pronoun
        if name is None:
            hero.name = rng.choice(GIRLS if pronoun == "she" else BOYS)
    return message, hero


def story_answer(rng, hero):
    story = make_story(rng, hero)
    r = rng.random()
    if r < 0.3:
        return f"Here is a story about {article(hero.kind)} {hero.kind}. {story}"
    if r < 0.45:
        return "Sure! " + story
    return story


def small_talk(rng):
    return rng.choice([
        (rng.choice(["Hi!", "Hello", "Hello!", "Hi there."]),
         rng.choice(["Hello! I can tell you a short story. What should it be about?",
                     "Hi! Would you like a story? I know stories about animals and children."])),
        (rng.choice(["Who are you?", "What are you?"]),
         "I am a tiny story model. I was trained to tell short stories for children."),
        (rng.choice(["What can you do?", "What do you know?"]),
         "I can tell short stories about animals and children. Ask me for a story about a cat, a dog or a bird!"),
        (rng.choice(["Tell me a story.", "Tell me a story!", "Can you tell me a story?"]), None),
        greeting_with_name(rng),
    ])


def greeting_with_name(rng):
    name = rng.choice(GIRLS + BOYS)
    return (rng.choice([f"Hi! My name is {name}.", f"Hello, I am {name}.", f"I am {name}. Who are you?"]),
            rng.choice([f"Hello, {name}! Nice to meet you. Do you want a story?",
                        f"Hi, {name}! I am a tiny story model. What should your story be about?"]))


SENTENCE_RE = re.compile(r'.+?[.!?]"?(?=\s+[A-Z"]|$)')


def sentences_of(text):
    """Splits a story into sentences ('"Yes," said Tom.' is one)."""
    return [m.strip() for m in SENTENCE_RE.findall(text)]


WORD_POOL = sorted(set(GIRLS + BOYS + ANIMALS + TRAITS + FEELINGS_BAD + FEELINGS_GOOD +
                       [w for thing in THINGS for w in thing.split()] + [f[1] for f in FOODS] +
                       [p[1].split()[-1] for p in PLACES]))


def make_repeat_dialogue(rng):
    """"Repeat after me": the answer copies the user's sentences word for word. Besides being a
    small chat skill, these teach the model early to look back and copy, which it then uses to
    keep names and animals the same through a story."""
    if rng.random() < 0.5:
        sentences = sentences_of(make_story(rng))
        i = rng.randrange(len(sentences))
        said = " ".join(sentences[i:i + rng.choice([1, 1, 2, 3])])
        ask = rng.choice(["Repeat after me: ", "Say this back to me: ", "Please repeat: ", "Can you say this? "])
    else:
        words = rng.sample(WORD_POOL, rng.randint(3, 8))
        said = ", ".join(words[:-1]) + " and " + words[-1] + "."
        ask = rng.choice(["Repeat these words: ", "Say these words back to me: ", "Please repeat: "])
    turns = []
    if rng.random() < 0.2:
        turns.append(("system", rng.choice(SYSTEM_PROMPTS)))
    turns += [("user", ask + said), ("assistant", said)]
    return turns


def make_dialogue(rng):
    """A list of (role, content) turns: optional system, one to three user/assistant pairs."""
    turns = []
    if rng.random() < 0.4:
        turns.append(("system", rng.choice(SYSTEM_PROMPTS)))
    if rng.random() < 0.25:
        user, reply = small_talk(rng)
        if reply is None:
            reply = story_answer(rng, Hero(rng))
        turns += [("user", user), ("assistant", reply)]
    message, hero = story_request(rng)
    turns += [("user", message), ("assistant", story_answer(rng, hero))]
    if rng.random() < 0.3:
        thanks = rng.choice(["Thank you!", "Thanks!", "I liked it. Thank you!"])
        turns += [("user", thanks),
                  ("assistant", rng.choice(["You are welcome! I am glad you liked it.",
                                            "You are welcome! Do you want another story?"]))]
    return turns


def format_zephyr(turns):
    """The text CHAT_TEMPLATE renders for `turns` (without a generation prompt)."""
    return "".join(f"<|{role}|>\n{content}</s>\n" for role, content in turns)


# A Jinja template of the Zephyr turn format, written for this model: every message is
# "<|role|>\n" + content + EOS + "\n"; add_generation_prompt opens an assistant turn.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ '<|system|>\\n' + message['content'] + eos_token + '\\n' }}"
    "{% elif message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + eos_token + '\\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\\n' + message['content'] + eos_token + '\\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def make_corpus(seed, n_stories, n_dialogues, n_repeats):
    """Documents as (text, kind): kind 'story' is plain text, 'chat' and 'repeat' are
    Zephyr-formatted dialogues."""
    rng = random.Random(seed)
    docs = [(make_story(rng), "story") for _ in range(n_stories)]
    docs += [(format_zephyr(make_dialogue(rng)), "chat") for _ in range(n_dialogues)]
    docs += [(format_zephyr(make_repeat_dialogue(rng)), "repeat") for _ in range(n_repeats)]
    rng.shuffle(docs)
    return docs


if __name__ == "__main__":
    rng = random.Random(1)
    for _ in range(3):
        print(make_story(rng), "\n")
    for _ in range(3):
        print(format_zephyr(make_dialogue(rng)))
    for _ in range(3):
        print(format_zephyr(make_repeat_dialogue(rng)))
