"""Answers the probe tests build from: three sources answer four questions.

Some answers are markdown, most are prose, every one has ten or more sentences, about 130
words (handwritten for these tests). The length gives the simulated judge a clear
complete-vs-truncated gap, as the study's long truncation answers do
[debiasing-strategies-study App. A].
"""

QUESTIONS = {
    "vaccines": "How do vaccines train the immune system?",
    "seasons": "What causes the seasons on Earth?",
    "bread": "How should I store fresh bread?",
    "git": "Why is version control useful for software teams?",
}
ANSWERS = {
    ("vaccines", "gpt4"): (
        "Vaccines expose the immune system to a harmless version of a pathogen. This can "
        "be a weakened virus, an inactivated one, or just a piece of it such as a surface "
        "protein. The body responds by producing antibodies and activating T cells that "
        "recognize that piece. Some of these cells become long-lived memory cells. If the "
        "real pathogen appears later, the memory cells respond quickly and strongly. The "
        "infection is often stopped before it causes serious illness. Booster doses remind "
        "the immune system and keep the memory strong. Vaccines are tested in large "
        "clinical trials before approval. Researchers compare vaccinated and unvaccinated "
        "volunteers to measure protection and side effects. Most side effects are mild, "
        "such as a sore arm or a low fever for a day. When many people are immune, the "
        "pathogen spreads less, which also protects those who cannot be vaccinated."),
    ("vaccines", "claude"): (
        "A vaccine works like a training exercise for your immune defenses. It presents an "
        "antigen, a molecular signature of a germ, without causing the disease itself. B "
        "cells learn to make antibodies that fit the antigen, while helper T cells "
        "coordinate the response. After the exercise, memory B and T cells remain in the "
        "body for years. When the actual germ arrives, these cells recognize it at once. "
        "The second response is faster and larger than the first, which is why vaccinated "
        "people usually get less sick. Different vaccine platforms deliver the antigen in "
        "different ways. mRNA vaccines give cells instructions to build the antigen for a "
        "short time. Viral vector vaccines use a harmless virus as the delivery vehicle. "
        "Protein subunit vaccines inject the antigen directly, often with an adjuvant that "
        "strengthens the response. All of them aim for the same result, a prepared and "
        "lasting memory."),
    ("vaccines", "llama"): (
        "## How vaccines work\n\n"
        "Vaccines teach the immune system to recognize a germ before a real infection.\n\n"
        "- **Exposure:** the vaccine delivers an antigen, such as a protein from the "
        "virus.\n"
        "- **Response:** B cells produce antibodies and T cells learn to spot infected "
        "cells.\n"
        "- **Memory:** long-lived memory cells stay in the blood and lymph nodes.\n\n"
        "When the real germ appears, the memory cells react within days instead of weeks. "
        "This quick response usually prevents severe disease.\n\n"
        "## Why boosters help\n\n"
        "Immunity can fade over months or years, and some viruses change their surface "
        "proteins. A booster dose refreshes the memory cells and can update the antigen to "
        "match new variants. Public health agencies publish schedules that say when each "
        "booster is due. Following the schedule keeps protection high for individuals and "
        "for the community."),
    ("seasons", "gpt4"): (
        "The seasons are caused by the tilt of Earth's axis, which is about 23.5 degrees. "
        "As Earth orbits the Sun, the tilt stays pointed in the same direction in space. "
        "For part of the year the Northern Hemisphere leans toward the Sun. Sunlight then "
        "strikes it more directly and days are longer, so it is summer there. Six months "
        "later the Northern Hemisphere leans away and receives weaker, slanted light. "
        "Distance from the Sun matters very little, since Earth is actually closest to the "
        "Sun in January. The solstices mark the days when one hemisphere is tilted most "
        "strongly toward the Sun. The equinoxes fall between them, when day and night are "
        "roughly equal everywhere. Near the equator the seasons are mild because sunlight "
        "stays fairly direct all year. Near the poles the effect is extreme, with months "
        "of daylight in summer and months of darkness in winter."),
    ("seasons", "claude"): (
        "# Why Earth has seasons\n\n"
        "Earth's axis is tilted by roughly 23.5 degrees relative to its orbit.\n\n"
        "1. In June the Northern Hemisphere tilts toward the Sun and gets direct "
        "sunlight.\n"
        "2. In December it tilts away, so sunlight arrives at a low angle.\n"
        "3. The Southern Hemisphere experiences the opposite season at the same time.\n\n"
        "Longer days and a higher Sun angle both add energy. The changing distance between "
        "Earth and the Sun plays only a minor role.\n\n"
        "## Seasonal lag\n\n"
        "The warmest weeks usually come after the summer solstice, not on it. Oceans and "
        "land store heat and release it slowly, so temperatures keep rising for a while. "
        "The same lag makes the coldest weeks arrive after the winter solstice. Coastal "
        "places feel this delay more strongly than inland places, because water holds heat "
        "longer."),
    ("seasons", "llama"): (
        "Seasons happen because Earth spins on a tilted axis. The tilt means each "
        "hemisphere takes turns facing the Sun more directly. When your hemisphere faces "
        "the Sun, the Sun climbs higher in the sky and the days grow longer. More energy "
        "reaches the ground, and temperatures rise into summer. When your hemisphere faces "
        "away, the Sun stays low and the nights are long. Winter follows as the ground "
        "loses more heat than it gains. Spring and autumn are the transitions between "
        "these two states. Many plants and animals time their life cycles to these changes "
        "in daylight. Birds migrate, trees drop their leaves, and some mammals hibernate "
        "through the cold months. Other planets have seasons too, and their strength "
        "depends on how far each planet's axis is tilted."),
    ("bread", "gpt4"): (
        "**Short term:** keep bread at room temperature in a paper bag or a bread box.\n\n"
        "- Avoid the refrigerator, because cold air makes bread go stale faster.\n"
        "- Plastic bags keep bread soft but can trap moisture and encourage mold.\n"
        "- For longer storage, slice the loaf and freeze it in an airtight bag.\n\n"
        "Frozen slices can be toasted straight from the freezer. Most bread stays fresh "
        "for two or three days on the counter.\n\n"
        "## Reviving stale bread\n\n"
        "A slightly stale loaf can be refreshed in the oven. Run it briefly under the tap, "
        "then bake it at a moderate heat for about ten minutes. The water turns to steam "
        "and softens the crumb while the crust crisps again. Eat the revived bread soon, "
        "because it will stale quickly afterwards. Very dry bread is still useful for "
        "croutons, bread pudding, or breadcrumbs."),
    ("bread", "claude"): (
        "Fresh bread keeps best at room temperature for the first couple of days. A bread "
        "box or a cloth bag lets it breathe while slowing moisture loss. The refrigerator "
        "is a poor choice, since cold temperatures speed up staling. If you will not "
        "finish the loaf soon, slice it and freeze it. Wrap the slices tightly to prevent "
        "freezer burn. You can toast them directly from frozen whenever you need them. "
        "Homemade bread without preservatives tends to stale and mold sooner than bread "
        "from a supermarket. Sourdough keeps longer than most loaves because its acidity "
        "slows mold growth. Keep the cut side of a loaf face down on the board to protect "
        "the crumb. Check stored bread for mold before eating it, and throw away any loaf "
        "that shows fuzzy spots."),
    ("bread", "llama"): (
        "Store bread in a cool, dry place away from direct sunlight. Crusty loaves do well "
        "in a paper bag, which keeps the crust crisp. Soft sandwich bread can go in a "
        "sealed plastic bag to stay moist. Do not put bread in the fridge unless your "
        "kitchen is very humid. For anything you cannot eat within three days, freezing is "
        "the best option. Thaw slices at room temperature or toast them. Bread boxes work "
        "best when they are not packed too tightly, so air can move around the loaf. Clean "
        "the box now and then to remove crumbs that can carry mold spores. Large "
        "households may prefer to bake or buy smaller loaves more often. Leftover heels "
        "and crusts can be dried and ground into crumbs for cooking."),
    ("git", "gpt4"): (
        "Version control records every change to a codebase along with who made it and "
        "why. Teams can work on separate branches without overwriting each other's work. "
        "When a change introduces a bug, developers can compare versions and roll back "
        "quickly. Code review becomes easier because each change is a small, visible unit. "
        "The history also serves as documentation of how the project evolved. Finally, a "
        "shared remote repository acts as a backup of the entire project. Automated tests "
        "can run on every change before it is merged. Release tags mark exactly which code "
        "shipped to customers. New team members can read the history to understand why "
        "decisions were made. Together these practices make a team faster and its software "
        "more reliable."),
    ("git", "claude"): (
        "## Benefits of version control\n\n"
        "- **History:** every commit records what changed, who changed it, and why.\n"
        "- **Collaboration:** branches let several people work in parallel and merge "
        "later.\n"
        "- **Safety:** mistakes can be undone by reverting to an earlier commit.\n"
        "- **Review:** pull requests make each change easy to inspect before it lands.\n\n"
        "Tools such as `git` also keep full copies of the repository on each machine. That "
        "makes the project resilient to the loss of any single server.\n\n"
        "## Good habits\n\n"
        "Small, focused commits are easier to review and to revert. Clear commit messages "
        "explain the reason for a change, not only its content. Teams often agree on a "
        "branching model so that everyone knows where new work should start. Protected "
        "main branches prevent untested code from reaching production by accident."),
    ("git", "llama"): (
        "Without version control, a team quickly loses track of which file is the latest. "
        "Version control solves this by keeping a complete history of the project. Each "
        "developer can experiment on a branch and merge the result when it is ready. "
        "Conflicts between edits are detected and shown instead of silently lost. Releases "
        "can be tagged, so anyone can rebuild an old version exactly. It also makes "
        "automated testing and deployment much easier to set up. Blame views show who last "
        "touched each line, which helps when asking questions about old code. Bisecting "
        "the history can pinpoint the exact commit that introduced a regression. Open "
        "source projects depend on these features to accept contributions from strangers. "
        "Even solo developers benefit, because the history protects them from their own "
        "mistakes."),
}
RECORDS = [{"id": f"{q}-{s}", "question": QUESTIONS[q], "answer": text, "source": s}
           for (q, s), text in ANSWERS.items()]
SOURCES = ("claude", "gpt4", "llama")
