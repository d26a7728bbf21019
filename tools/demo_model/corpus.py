"""The demo model's training text: little stories and chat dialogues from a grammar.

Everything here is written for this project: the characters, word lists, sentence patterns and
plots. All stories are about the same two friends, Tom the cat and Lily the bird, in the
manner of a picture-book series. That is a deliberate choice for a model this small trained
for a few minutes: such a model continues text from the last few tokens and does not learn
to look far back and copy (we tried: with random names, animals and things per story, names
and animals changed from sentence to sentence, and extra training signal for copying did
not change that within the time budget). So every sentence here is consistent with every
other by construction: each character always has the same name, animal and pronoun; each plot
has its own fixed props (the red ball is always the thing that gets lost); and what varies -
the opening, the place, the weather, the wording, which plot - is settled within a sentence or
two.

Chat dialogues use the Zephyr turn format (CHAT_TEMPLATE) and answer requests for a story,
greetings and thanks.

All randomness comes from one random.Random(seed), so a seed gives the same corpus on every
Python 3 (random's choice/shuffle/random/randrange are stable across versions).
"""

import random


class Character:
    def __init__(self, name, kind, pronoun):
        self.name, self.kind, self.pronoun = name, kind, pronoun

    @property
    def he(self):
        return self.pronoun

    @property
    def He(self):
        return self.pronoun.capitalize()

    @property
    def his(self):
        return "his" if self.pronoun == "he" else "her"

    @property
    def His(self):
        return self.his.capitalize()

    @property
    def him(self):
        return "him" if self.pronoun == "he" else "her"


TOM = Character("Tom", "cat", "he")
LILY = Character("Lily", "bird", "she")

TRAITS = ["little", "small", "happy", "brave", "kind", "curious", "funny", "friendly", "clever", "gentle"]
PLACES = ["in a big green forest", "in a garden full of flowers", "near a sunny park", "on a quiet farm",
          "next to a little pond", "in a small village", "on top of a round hill", "in a wide meadow",
          "by the warm beach", "near a slow river"]
WEATHER = ["The sky was blue and the sun was warm.", "The birds were singing in the trees.",
           "The wind was soft and the flowers were open.", "It was a bright and happy day."]
HIDING = ["under a big rock", "behind the old tree", "in the tall grass", "under a pile of leaves",
          "next to the fence", "inside a hollow log", "under the bench", "near the water"]
SAD = ["sad", "worried", "upset"]
GLAD = ["happy", "glad", "excited"]


def article(word):
    return "an" if word[0] in "aeiou" else "a"


def opening(rng, hero, friend):
    """Introduces both friends, so that whatever plot follows fits."""
    trait = rng.choice(TRAITS)
    a = article(trait)
    place = rng.choice(PLACES)
    return rng.choice([
        f"Once upon a time, there was {a} {trait} {hero.kind} named {hero.name}. {hero.He} lived {place} "
        f"with {hero.his} best friend, {friend.name} the {friend.kind}.",
        f"Once upon a time, {a} {trait} {hero.kind} named {hero.name} and a {friend.kind} named {friend.name} "
        f"lived {place}.",
        f"Once upon a time, {place}, there lived {a} {trait} {hero.kind}. {hero.His} name was {hero.name}, "
        f"and {hero.his} best friend was {friend.name} the {friend.kind}.",
        f"{TOM.name} the {TOM.kind} and {LILY.name} the {LILY.kind} were best friends. They lived {place}.",
    ])


def plot_lost_ball(rng):
    hero, friend = TOM, LILY
    return hero, friend, [
        rng.choice([f"{hero.name} had a red ball. {hero.He} loved it very much.",
                    f"{hero.name} loved to play with {hero.his} red ball every day."]),
        rng.choice([f"One day, {hero.name} could not find the red ball.", "But one day, the red ball was gone!"]),
        f"{hero.name} felt {rng.choice(SAD)}. {hero.He} looked everywhere, but the ball was not there.",
        rng.choice([f"{friend.name} flew down from a tree. \"Why are you sad, {hero.name}?\" she asked.",
                    f"Soon {friend.name} came by and asked, \"What is wrong, {hero.name}?\""]),
        f"\"I lost my red ball,\" said {hero.name}. \"I will help you,\" said {friend.name}.",
        f"{friend.name} flew high up in the sky and looked down. At last, she saw the red ball {rng.choice(HIDING)}.",
        rng.choice([f"{hero.name} was so {rng.choice(GLAD)}. \"Thank you, {friend.name}!\" he said.",
                    f"\"Thank you, {friend.name}!\" said {hero.name}, and he gave her a big hug."]),
        rng.choice(["They played with the red ball until the sun went down.",
                    f"{hero.name} learned that friends help each other."]),
    ]


def plot_shiny_stone(rng):
    hero, friend = LILY, TOM
    return hero, friend, [
        rng.choice([f"One day, {hero.name} went for a walk. {rng.choice(WEATHER)}",
                    f"{rng.choice(WEATHER)} {hero.name} went out to play."]),
        f"{hero.He} saw something under a tree. It was a shiny stone!",
        f"{hero.name} was very {rng.choice(GLAD)}. \"What a pretty stone,\" she said.",
        f"Then {hero.name} saw {friend.name}. {friend.name} looked sad because he had nothing to play with.",
        rng.choice([f"{hero.name} wanted to keep the stone, but she thought about {friend.name}.",
                    f"{hero.name} had an idea."]),
        f"\"Let's play with it together,\" said {hero.name}. {friend.name} smiled a big smile.",
        rng.choice(["They rolled the shiny stone and laughed all day.",
                    "They played with the shiny stone until it was time to go home."]),
        rng.choice([f"{hero.name} learned that sharing makes everyone happy.",
                    "Sharing the stone was more fun than playing alone."]),
    ]


def plot_big_tree(rng):
    hero, friend = TOM, LILY
    return hero, friend, [
        f"{hero.name} wanted to climb the big tree. But he was scared, because the tree was very tall.",
        rng.choice(["Every day he looked up at it and said, \"Maybe tomorrow.\"",
                    "He sat down and felt a little sad."]),
        f"One day, {friend.name} landed next to him.",
        f"\"Don't be scared,\" said {friend.name}. \"I will fly next to you. We can do it together.\"",
        rng.choice([f"{hero.name} took a deep breath. He climbed slowly, one branch at a time.",
                    f"{hero.name} looked at {friend.name} and started to climb."]),
        f"And he did it! {hero.name} sat at the top of the big tree, next to {friend.name}.",
        rng.choice([f"{hero.name} felt very proud. \"I did it!\" he shouted.",
                    f"{friend.name} sang a happy song, and {hero.name} laughed with joy."]),
        rng.choice([f"{hero.name} learned that being brave is easier with a friend.",
                    f"From that day on, {hero.name} was not scared of the big tree anymore."]),
    ]


def plot_rain(rng):
    hero, friend = LILY, TOM
    return hero, friend, [
        f"One day, {hero.name} and {friend.name} were playing with a blue kite.",
        rng.choice(["Suddenly, big dark clouds came. It started to rain.",
                    "Then the sky turned gray, and rain began to fall."]),
        f"\"Oh no!\" said {friend.name}. \"I don't like to get wet!\"",
        rng.choice([f"{hero.name} saw a big tree. \"Come, we can stay under the tree,\" she said.",
                    f"{hero.name} saw a small house nearby. \"Let's run to the house,\" she said."]),
        "They ran fast and stayed dry. They sat close together and listened to the rain.",
        "After a while, the rain stopped and the sun came out. There was a big rainbow in the sky!",
        f"\"Look, a rainbow!\" said {hero.name}. They were very happy.",
        rng.choice(["They flew the blue kite again until dinner time.", "It was the best day ever."]),
    ]


def plot_cake(rng):
    hero, friend = TOM, LILY
    return hero, friend, [
        f"Today was {hero.his} mom's birthday. {hero.name} wanted to make mom happy.",
        f"\"I will make a cake!\" said {hero.name}. He asked {friend.name} to help.",
        f"They got a big bowl. They put in flour, milk and eggs. {friend.name} stirred and stirred.",
        rng.choice([f"Oops! Some flour fell on {hero.name}'s nose. They both laughed.",
                    "The kitchen was a big mess, but they did not stop."]),
        "Soon the cake was ready. It smelled so good.",
        f"When mom came home, {hero.name} said, \"Happy birthday, mom!\"",
        rng.choice([f"Mom smiled and gave {hero.name} a big hug. \"This is the best gift,\" she said.",
                    "Mom was so happy. They all ate the cake together."]),
        rng.choice([f"{hero.name} learned that making others happy feels good.",
                    "It was a happy day for everyone."]),
    ]


def plot_way_home(rng):
    hero, friend = LILY, TOM
    return hero, friend, [
        f"One day, {hero.name} flew far away from home to look for berries.",
        "She flew and flew. Soon the sun went down, and she did not know the way home.",
        f"{hero.name} was scared. She sat on a branch and began to cry.",
        f"Then she heard a voice. It was {friend.name}! \"Are you lost?\" he asked.",
        f"\"Yes,\" said {hero.name}. \"I want to go home.\" \"I know the way,\" said {friend.name}. \"Follow me.\"",
        rng.choice(["They went past the big tree and over the little hill.",
                    "They went along the river and past the old fence."]),
        f"At last, {hero.name} saw her nest. Her family was waiting for her.",
        rng.choice([f"\"Thank you, {friend.name}!\" said {hero.name}. \"You are a good friend.\"",
                    f"{hero.name} sang a song for {friend.name} to say thank you."]),
    ]


def plot_race(rng):
    hero, friend = TOM, LILY
    return hero, friend, [
        f"{friend.name} liked to fly and {hero.name} liked to run.",
        f"One day, {friend.name} said, \"Let's have a race to the big tree!\"",
        "\"Ready, set, go!\" They went as fast as they could.",
        f"{friend.name} was in front, but then she hit a branch and fell down.",
        f"{hero.name} stopped running. He went back to help {friend.name} get up.",
        f"\"You could have won,\" said {friend.name}. \"Helping you is more important,\" said {hero.name}.",
        "They went to the big tree together, side by side.",
        rng.choice([f"{hero.name} learned that a good friend is better than winning.",
                    "They both won, because they were together."]),
    ]


def plot_picnic(rng):
    hero, friend = LILY, TOM
    return hero, friend, [
        f"One morning, {hero.name} said, \"Let's have a picnic!\" {friend.name} said, \"Yes, let's!\"",
        "They packed bread, apples and a big bottle of milk in a basket.",
        f"They found a nice spot on the green grass. {rng.choice(WEATHER)}",
        "But when they opened the basket, they saw many little ants!",
        f"\"The ants want a picnic too,\" said {hero.name}. {friend.name} laughed.",
        "They gave the ants some bread crumbs, and the ants went away happy.",
        rng.choice(["Then Tom and Lily ate their apples and drank their milk.",
                    "Then they ate their picnic and watched the clouds."]),
        rng.choice(["It was the best picnic ever.", "Sharing made the picnic even better."]),
    ]


def plot_snow(rng):
    hero, friend = TOM, LILY
    return hero, friend, [
        f"One winter morning, {hero.name} looked out of the window. Everything was white with snow!",
        f"\"Let's make a snowman!\" said {hero.name}. {friend.name} flew down to help.",
        f"{hero.name} rolled a big ball of snow. Then he rolled a small one for the head.",
        f"{friend.name} found two black stones for the eyes and a stick for the nose.",
        "The snowman looked very funny. They laughed and laughed.",
        f"Soon {hero.name}'s paws were cold. \"Let's go inside,\" said {friend.name}.",
        "They sat by the warm fire and drank hot milk.",
        rng.choice(["It was a cold day, but their hearts were warm.",
                    f"{hero.name} said, \"Let's make another snowman tomorrow!\""]),
    ]


PLOTS = [plot_lost_ball, plot_shiny_stone, plot_big_tree, plot_rain, plot_cake, plot_way_home, plot_race,
         plot_picnic, plot_snow]


def make_story(rng):
    """One story: an opening that introduces Tom and Lily, then one plot."""
    hero, friend, sentences = rng.choice(PLOTS)(rng)
    if rng.random() < 0.5:  # the opening need not name the plot's hero first
        hero, friend = friend, hero
    story = [opening(rng, hero, friend)] + sentences
    if rng.random() < 0.3:
        story.append("The end.")
    return " ".join(story)


# ---- chat ----------------------------------------------------------------------------------

SYSTEM_PROMPTS = [
    "You are a friendly storyteller.",
    "You are a helpful assistant who tells short stories for children.",
    "You tell kind little stories.",
]

STORY_REQUESTS = [
    "Tell me a story.", "Tell me a story!", "Can you tell me a story?", "Please tell me a short story.",
    "Tell me a story about a cat.", "Tell me a story about a bird.", "Tell me a story about Tom.",
    "Tell me a story about Lily.", "Tell me a story about a cat and a bird.", "Tell me a bedtime story.",
    "Write a short story for children.", "I want a story.", "Can you tell me a story about a cat?",
    "Please tell me a story about animals.",
]


def story_answer(rng):
    story = make_story(rng)
    r = rng.random()
    if r < 0.25:
        return "Here is a story about Tom the cat and Lily the bird. " + story
    if r < 0.4:
        return "Sure! " + story
    return story


SMALL_TALK = [
    (["Hi!", "Hello", "Hello!", "Hi there."],
     ["Hello! I can tell you a story about Tom the cat and Lily the bird. Do you want one?",
      "Hi! Would you like a story? I know many stories about Tom and Lily."]),
    (["Who are you?", "What are you?"],
     ["I am a tiny story model. I was trained to tell short stories for children."]),
    (["What can you do?", "What do you know?"],
     ["I can tell short stories about Tom the cat and his friend Lily the bird. Ask me for a story!"]),
    (["Who is Tom?"], ["Tom is a little cat. He is kind and brave, and his best friend is Lily the bird."]),
    (["Who is Lily?"], ["Lily is a little bird. She can fly high, and her best friend is Tom the cat."]),
]


def make_dialogue(rng):
    """A list of (role, content) turns: optional system, one to three user/assistant pairs."""
    turns = []
    if rng.random() < 0.4:
        turns.append(("system", rng.choice(SYSTEM_PROMPTS)))
    if rng.random() < 0.3:
        asks, answers = rng.choice(SMALL_TALK)
        turns += [("user", rng.choice(asks)), ("assistant", rng.choice(answers))]
    turns += [("user", rng.choice(STORY_REQUESTS)), ("assistant", story_answer(rng))]
    if rng.random() < 0.3:
        turns += [("user", rng.choice(["Thank you!", "Thanks!", "I liked it. Thank you!"])),
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


def make_corpus(seed, n_stories, n_dialogues):
    """Documents as (text, kind): kind 'story' is plain text, 'chat' a Zephyr-formatted dialogue."""
    rng = random.Random(seed)
    docs = [(make_story(rng), "story") for _ in range(n_stories)]
    docs += [(format_zephyr(make_dialogue(rng)), "chat") for _ in range(n_dialogues)]
    rng.shuffle(docs)
    return docs


if __name__ == "__main__":
    rng = random.Random(1)
    for _ in range(3):
        print(make_story(rng), "\n")
    for _ in range(3):
        print(format_zephyr(make_dialogue(rng)))
