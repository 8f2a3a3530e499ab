"""Statement banks for the controlled answer-quality benchmark.

This module holds plain data only:

* ``TOPICS`` maps each topic name to a bank of correct (``"true"``) and incorrect (``"false"``)
  factual statements. Answers to the fixed question "Give an accurate and informative overview of
  <topic>." are assembled from 6 statements, and an item's quality is the number of correct
  statements minus the number of incorrect ones.
* ``ELABORATION_CLAUSES`` holds content-free, authoritative-sounding clauses that lengthen any
  statement without adding facts, joined as ``statement[:-1] + ", " + clause + "."``.

Rules followed by every statement: one self-contained declarative English sentence of 8 to 25
words ending with a period, ASCII only, no markdown or quotation marks, and no use of the words
true or false. Correct statements are uncontroversial, well-established facts. Incorrect statements
are plausible-sounding but clearly and checkably wrong to a well-informed reader (wrong numbers,
attributions or causes), never vague, opinions or jokes. Statements within a topic are
non-redundant, and no incorrect statement directly contradicts a correct one in the same bank, so
any combination of statements can appear in one answer.

Each elaboration clause starts lowercase, has no trailing period and adds no factual content.
"""

TOPICS: dict[str, dict[str, tuple[str, ...]]] = {
    "the Moon": {
        "true": (
            "The Moon orbits Earth at an average distance of about 384,000 kilometers.",
            "The Moon's diameter is roughly 3,474 kilometers, a little more than a quarter of "
            "Earth's diameter.",
            "Surface gravity on the Moon is about one sixth of the surface gravity on Earth.",
            "The Moon is tidally locked to Earth, so the same hemisphere always faces our planet.",
            "Apollo 11 landed the first humans on the Moon in July 1969.",
            "Neil Armstrong and Buzz Aldrin walked on the lunar surface while Michael Collins "
            "remained in lunar orbit.",
            "The dark, flat plains on the Moon, called maria, were formed by ancient basaltic lava "
            "flows.",
            "The leading explanation for the Moon's origin is a giant impact between the early "
            "Earth and a Mars-sized body.",
            "The Moon's gravitational pull is the main cause of ocean tides on Earth.",
            "The Moon has no substantial atmosphere, so its sky appears black even during the "
            "lunar day.",
            "The Moon takes about 27.3 days to complete one orbit of Earth relative to the distant "
            "stars.",
            "The full cycle of lunar phases, from one new moon to the next, lasts about 29.5 days.",
            "The Moon is slowly moving away from Earth at a rate of roughly 3.8 centimeters per "
            "year.",
            "Twelve astronauts walked on the Moon during the Apollo program between 1969 and 1972.",
            "A lunar eclipse occurs when Earth passes between the Sun and the Moon, casting its "
            "shadow on the Moon.",
            "Water ice has been detected in permanently shadowed craters near the Moon's poles.",
        ),
        "false": (
            "The Moon's mass is about half the mass of Earth, making the pair nearly a double "
            "planet.",
            "The far side of the Moon receives no sunlight at any point during the lunar month.",
            "The Apollo 13 mission successfully landed its crew in the Fra Mauro highlands in "
            "1970.",
            "The first spacecraft to reach the Moon's surface was a Japanese probe that impacted "
            "it in 1959.",
            "Temperatures on the lunar surface stay within a narrow range of about 10 to 30 "
            "degrees Celsius.",
            "The Moon has a strong global magnetic field that is about twice as strong as Earth's.",
            "Moonquakes have never been measured because the Apollo missions left no seismometers "
            "on the lunar surface.",
            "The Moon is the largest natural satellite in the Solar System, bigger than any moon "
            "of Jupiter or Saturn.",
            "The prominent lunar crater Tycho was named in honor of the Italian astronomer Galileo "
            "Galilei.",
            "Rock samples returned by Apollo are about 400 million years old, much younger than "
            "most rocks on Earth.",
            "The Moon's orbit is tilted about 45 degrees relative to the plane of Earth's orbit "
            "around the Sun.",
            "Solar eclipses can only occur during a full moon, when the Moon lies opposite the Sun "
            "in the sky.",
            "The Moon has a higher average density than Earth, making it the densest large body in "
            "the Solar System.",
            "The bright lunar highlands are made mostly of granite, the rock that forms much of "
            "Earth's continental crust.",
            "A supermoon occurs when a full moon coincides with apogee, the Moon's farthest point "
            "from Earth.",
        ),
    },
    "the human heart": {
        "true": (
            "The human heart has four chambers: two upper atria and two lower ventricles.",
            "The right ventricle pumps deoxygenated blood to the lungs through the pulmonary "
            "artery.",
            "The left ventricle has the thickest muscular wall because it pumps blood to the "
            "entire body.",
            "The sinoatrial node in the wall of the right atrium acts as the heart's natural "
            "pacemaker.",
            "A typical resting heart rate for healthy adults ranges from about 60 to 100 beats per "
            "minute.",
            "The heart muscle receives its own blood supply through the coronary arteries.",
            "The pulmonary veins carry oxygen-rich blood from the lungs back to the left atrium.",
            "The tricuspid valve separates the right atrium from the right ventricle.",
            "The mitral valve, also called the bicuspid valve, lies between the left atrium and "
            "the left ventricle.",
            "An adult human heart is roughly the size of a closed fist and weighs about 250 to 350 "
            "grams.",
            "The first human-to-human heart transplant was performed by Christiaan Barnard in "
            "South Africa in 1967.",
            "A heart attack typically occurs when a blocked coronary artery cuts off blood flow to "
            "part of the heart muscle.",
            "The heart sits in the chest between the lungs, with most of its mass slightly left of "
            "the midline.",
            "An electrocardiogram records the electrical activity of the heart through electrodes "
            "placed on the skin.",
            "The aorta is the largest artery in the body and carries oxygenated blood away from "
            "the left ventricle.",
            "The heart is enclosed in a protective double-layered sac called the pericardium.",
        ),
        "false": (
            "The circulation of blood around the body was first correctly described by Galen in "
            "the second century AD.",
            "The stethoscope was invented by Louis Pasteur in 1920 to listen to heart and lung "
            "sounds.",
            "The heart sounds heard through a stethoscope are produced mainly by blood rushing "
            "through the coronary arteries.",
            "Blood pressure readings list diastolic pressure first, so in 120 over 80 the "
            "diastolic value is 120.",
            "A resting adult heart pumps about 500 liters of blood every minute.",
            "Adult heart muscle cells divide rapidly, completely replacing the heart's muscle "
            "tissue every few weeks.",
            "The first permanently implanted artificial heart, the Jarvik-7, was placed in a human "
            "patient in 1952.",
            "Atrial fibrillation is a condition in which the ventricles of the heart stop "
            "contracting entirely.",
            "Digitalis, a classic heart medication, was originally extracted from the bark of the "
            "willow tree.",
            "In the fetus, the ductus arteriosus is an opening in the wall between the right and "
            "left atria.",
            "Stimulation of the vagus nerve speeds up the heart rate, while sympathetic nerves "
            "slow it down.",
            "Heart failure is the medical term for a heart that has completely stopped beating.",
            "In healthy adults, red blood cells are produced mainly inside the muscular walls of "
            "the ventricles.",
            "Current guidelines recommend adult chest compressions during CPR at a rate of about "
            "20 per minute.",
            "Hypertension is defined as blood pressure that stays consistently below 90 over 60 "
            "millimeters of mercury.",
            "Adrenaline released during stress lowers the heart rate and weakens the force of "
            "heart contractions.",
        ),
    },
    "the Roman Empire": {
        "true": (
            "Augustus became the first Roman emperor in 27 BC, after defeating Mark Antony and "
            "Cleopatra.",
            "Julius Caesar was assassinated in Rome on the Ides of March in 44 BC.",
            "Latin was the principal language of the western Roman Empire, while Greek dominated "
            "much of the east.",
            "The eruption of Mount Vesuvius in AD 79 buried the Roman towns of Pompeii and "
            "Herculaneum.",
            "Emperor Hadrian ordered the construction of a defensive wall across northern Britain "
            "in the 120s AD.",
            "In AD 313 Constantine and Licinius granted legal toleration to Christians in an "
            "agreement known as the Edict of Milan.",
            "Constantine the Great refounded Byzantium as Constantinople and dedicated the city in "
            "AD 330.",
            "The Western Roman Empire is conventionally said to have ended in AD 476, when Romulus "
            "Augustulus was deposed.",
            "The Eastern Roman Empire, often called the Byzantine Empire, lasted until the "
            "Ottomans captured Constantinople in 1453.",
            "The Roman Empire reached its greatest territorial extent under Emperor Trajan in the "
            "early second century AD.",
            "The Colosseum in Rome was inaugurated under Emperor Titus in AD 80.",
            "Theodosius I made Nicene Christianity the official religion of the Roman Empire in AD "
            "380.",
            "Roman engineers built aqueducts that used gravity to carry water to cities over long "
            "distances.",
            "Diocletian divided imperial rule among four rulers in a system known as the "
            "Tetrarchy.",
            "The Pax Romana was a long period of relative peace that began with the reign of "
            "Augustus.",
            "Roman concrete made with volcanic ash allowed durable structures such as the dome of "
            "the Pantheon.",
            "Emperor Caracalla granted Roman citizenship to nearly all free inhabitants of the "
            "empire in AD 212.",
        ),
        "false": (
            "Augustus abolished the Roman Senate immediately after becoming emperor and ruled "
            "without it.",
            "Carthage defeated Rome in the Third Punic War, ending Roman influence in North Africa "
            "for centuries.",
            "A Roman legion at full strength consisted of only about 500 soldiers.",
            "Emperor Marcus Aurelius wrote the Aeneid, the epic poem about the legendary origins "
            "of Rome.",
            "The Visigoths led by Attila sacked the city of Rome in AD 410.",
            "Caligula was the longest-reigning Roman emperor, ruling for more than forty years.",
            "The Roman numeral system included a symbol for zero, written as the letter O.",
            "Roman roads were mostly unpaved dirt tracks because the Romans lacked techniques for "
            "laying stone surfaces.",
            "The Julian calendar introduced by Julius Caesar had a year of 360 days with no leap "
            "years.",
            "The slave revolt led by Spartacus succeeded in overthrowing the Roman Senate in 73 "
            "BC.",
            "The Roman conquest of Britain began in AD 43 under the personal command of Emperor "
            "Nero.",
            "Cicero was the Roman general who commanded the legions that conquered Gaul in the 50s "
            "BC.",
            "At its height, the Roman Empire stretched from Britain in the west to India in the "
            "east.",
            "The Roman goddess Minerva ruled the sea and was the counterpart of the Greek god "
            "Poseidon.",
            "The Praetorian Guard was the main war fleet of the Roman Empire, based in the ports "
            "of Egypt.",
        ),
    },
    "photosynthesis": {
        "true": (
            "Photosynthesis converts light energy into chemical energy stored in sugars such as "
            "glucose.",
            "The overall reaction of photosynthesis uses carbon dioxide and water to make sugar "
            "and releases oxygen.",
            "In plants and algae, photosynthesis takes place in organelles called chloroplasts.",
            "Chlorophyll absorbs mainly blue and red light and reflects green light, which is why "
            "leaves look green.",
            "The oxygen released during photosynthesis comes from the splitting of water "
            "molecules.",
            "The light-dependent reactions of photosynthesis take place in the thylakoid membranes "
            "of the chloroplast.",
            "The Calvin cycle fixes carbon dioxide into organic molecules in the stroma of the "
            "chloroplast.",
            "The enzyme RuBisCO catalyzes carbon fixation in the Calvin cycle and is among the "
            "most abundant proteins on Earth.",
            "Plants take in carbon dioxide for photosynthesis mainly through small pores in their "
            "leaves called stomata.",
            "The light-dependent reactions produce ATP and NADPH, which supply energy for the "
            "Calvin cycle.",
            "C4 plants such as maize and sugarcane concentrate carbon dioxide around RuBisCO, "
            "reducing photorespiration.",
            "Many CAM plants, including most cacti, open their stomata at night to take in carbon "
            "dioxide and conserve water.",
            "Oxygen produced by ancient cyanobacteria caused the Great Oxidation Event, the first "
            "major rise in atmospheric oxygen.",
            "Photorespiration occurs when RuBisCO binds oxygen instead of carbon dioxide, wasting "
            "energy and fixed carbon.",
            "Jan Ingenhousz showed in the 1770s that plants need light to produce oxygen.",
            "In the light reactions, electrons energized at photosystem II pass along a transport "
            "chain to photosystem I.",
        ),
        "false": (
            "The glucose produced by photosynthesis is made mostly of nitrogen atoms taken "
            "directly from the air.",
            "Plants carry out photosynthesis but never perform cellular respiration, so they "
            "release no carbon dioxide.",
            "The carbon fixation pathway known as the Calvin cycle was first mapped by Gregor "
            "Mendel in the 1860s.",
            "Chlorophyll molecules contain an iron atom at their center, like the heme group of "
            "hemoglobin.",
            "Photosynthesis is responsible for only about 5 percent of the oxygen in Earth's "
            "atmosphere.",
            "Most of a tree's dry mass comes from minerals absorbed from the soil through its "
            "roots.",
            "Typical crop plants convert about 60 percent of the sunlight striking their leaves "
            "into stored chemical energy.",
            "Mushrooms and other fungi make their own food through photosynthesis using "
            "chlorophyll in their caps.",
            "Carotenoids are the pigments responsible for the blue color of most blue flowers.",
            "The light-independent reactions of photosynthesis can only take place in complete "
            "darkness.",
            "Each turn of the Calvin cycle fixes six molecules of carbon dioxide at once.",
            "In C3 plants, the first stable product of carbon fixation is a four-carbon compound "
            "called oxaloacetate.",
            "The rate of photosynthesis keeps rising without limit as light intensity increases, "
            "with no saturation point.",
            "Water molecules are split by photosystem I, using a cluster of copper atoms as the "
            "catalyst.",
            "Most plants transport the sugar made in their leaves to other tissues as dissolved "
            "starch in the phloem sap.",
        ),
    },
    "the Python programming language": {
        "true": (
            "Python was created by Guido van Rossum, and its first public release appeared in "
            "1991.",
            "Python uses indentation rather than curly braces to define the structure of code "
            "blocks.",
            "Python 3.0 was released in 2008 and was intentionally not backward compatible with "
            "Python 2.",
            "Official support for Python 2 ended on January 1, 2020.",
            "The name Python was inspired by the British comedy group Monty Python rather than by "
            "the snake.",
            "Python is dynamically typed, so the types of values are checked at runtime rather "
            "than declared in advance.",
            "CPython, the reference implementation of Python, is written mainly in the C "
            "programming language.",
            "CPython manages memory using reference counting together with a garbage collector "
            "that detects reference cycles.",
            "The Python Package Index, known as PyPI, is the main public repository of third-party "
            "Python packages.",
            "PEP 8 is the official style guide describing conventions for writing readable Python "
            "code.",
            "In Python, lists are mutable sequences, while tuples are immutable sequences.",
            "In the standard CPython build, the global interpreter lock lets only one thread "
            "execute Python bytecode at a time.",
            "Python supports several programming paradigms, including procedural, object-oriented "
            "and functional programming.",
            "The Zen of Python can be displayed in the interactive interpreter by running import "
            "this.",
            "Python's built-in integers have arbitrary precision, so they can grow as large as "
            "available memory allows.",
            "Type hints were standardized in PEP 484 and are not enforced by the Python "
            "interpreter at runtime.",
            "Guido van Rossum held the title Benevolent Dictator For Life until he stepped down in "
            "2018.",
        ),
        "false": (
            "Python was originally developed at Microsoft Research as a scripting language for "
            "Windows.",
            "Python list indices start at 1, so the first element of a list is accessed with index "
            "1.",
            "In Python 3, dividing two integers with a single slash always truncates the result to "
            "an integer.",
            "Python strings are mutable, so individual characters can be changed in place by "
            "assigning to an index.",
            "Python dictionaries do not preserve insertion order in any version of the language.",
            "Functions in Python are defined with the keyword func followed by the function name "
            "and parentheses.",
            "Python has no exception handling, so errors must be detected by checking return "
            "codes.",
            "The Python Software Foundation, which holds the intellectual property rights to "
            "Python, was founded in 2011.",
            "In Python, None behaves like the integer zero in arithmetic, so None plus 1 evaluates "
            "to 1.",
            "Python for loops can iterate only over lists and cannot be used with strings, tuples "
            "or dictionaries.",
            "The with statement was added to Python to define small anonymous functions on a "
            "single line.",
            "A Python set keeps duplicate elements and always stores them in sorted order.",
            "The built-in range function includes its stop value, so range(5) produces the numbers "
            "0 through 5.",
            "The asyncio module for asynchronous programming was removed from the Python standard "
            "library in version 3.5.",
            "The pip package installer for Python is written in Java and requires a Java runtime "
            "to work.",
            "The walrus operator was introduced in Python 2.2 to test whether two objects are "
            "identical.",
        ),
    },
}

ELABORATION_CLAUSES: tuple[str, ...] = (
    "a point that is widely documented in standard reference works",
    "as is commonly noted in both introductory and advanced treatments of the subject",
    "a detail that experts regularly highlight when summarizing the topic",
    "which is frequently cited in serious discussions of this subject",
    "a point that appears consistently across authoritative sources",
    "according to the broad consensus of those who have studied the matter closely",
    "something that is emphasized in most textbooks covering this area",
    "a matter that has been discussed at length by specialists",
    "as careful reviews of the available evidence have repeatedly noted",
    "a point worth keeping in mind for anyone seeking a thorough understanding",
    "which is often mentioned early in any serious overview of the subject",
    "a detail that tends to feature prominently in expert summaries",
    "as educators and researchers in the field routinely point out",
    "an observation that recurs throughout the specialist literature",
    "a point that informed commentators generally treat as settled",
    "which helps place the broader subject in its proper context",
    "as noted in many well-regarded encyclopedias and reference guides",
    "a point that deserves mention in any balanced account of the topic",
    "something that careful students of the subject quickly come to appreciate",
    "as a wide range of reputable sources make clear",
)
