"""Word lists for the synthetic skill library (hand-written; no data is downloaded)."""

from __future__ import annotations

#: 40 skill families ("domains"), each with four interchangeable family terms (synonyms).
FAMILIES: tuple[tuple[str, ...], ...] = (
    ("email", "inbox", "mail", "message"),
    ("calendar", "meeting", "appointment", "event"),
    ("spreadsheet", "worksheet", "cell", "column"),
    ("invoice", "billing", "payment", "receipt"),
    ("image", "photo", "picture", "pixel"),
    ("audio", "sound", "podcast", "recording"),
    ("video", "movie", "clip", "footage"),
    ("database", "query", "record", "schema"),
    ("code", "repository", "commit", "branch"),
    ("weather", "forecast", "temperature", "rainfall"),
    ("travel", "flight", "hotel", "itinerary"),
    ("recipe", "cooking", "ingredient", "meal"),
    ("fitness", "workout", "exercise", "training"),
    ("finance", "stock", "portfolio", "investment"),
    ("map", "route", "location", "navigation"),
    ("contact", "address", "phonebook", "person"),
    ("document", "report", "paper", "manuscript"),
    ("presentation", "slide", "deck", "keynote"),
    ("chat", "conversation", "thread", "channel"),
    ("security", "password", "credential", "login"),
    ("network", "router", "bandwidth", "connection"),
    ("server", "deployment", "container", "cluster"),
    ("shopping", "cart", "order", "product"),
    ("music", "playlist", "song", "album"),
    ("news", "article", "headline", "journalism"),
    ("social", "post", "follower", "feed"),
    ("health", "patient", "symptom", "medication"),
    ("legal", "contract", "clause", "lawsuit"),
    ("education", "course", "lesson", "student"),
    ("translation", "language", "dictionary", "grammar"),
    ("weatherstation", "sensor", "telemetry", "reading"),
    ("vehicle", "car", "engine", "fuel"),
    ("garden", "plant", "seed", "soil"),
    ("pet", "dog", "cat", "veterinary"),
    ("sports", "match", "team", "score"),
    ("book", "novel", "chapter", "library"),
    ("game", "level", "player", "quest"),
    ("home", "thermostat", "lighting", "appliance"),
    ("energy", "solar", "battery", "electricity"),
    ("hiring", "candidate", "resume", "interview"),
)

#: Skill actions, each with paraphrase synonyms (first entry is the canonical verb).
VERBS: tuple[tuple[str, ...], ...] = (
    ("create", "make", "generate", "build"),
    ("delete", "remove", "erase", "discard"),
    ("search", "find", "look up", "locate"),
    ("summarize", "condense", "digest", "recap"),
    ("convert", "transform", "change format of", "transcode"),
    ("export", "save out", "dump", "write out"),
    ("import", "load", "ingest", "bring in"),
    ("validate", "check", "verify", "audit"),
    ("merge", "combine", "join", "unify"),
    ("split", "divide", "break up", "partition"),
    ("translate", "render in another language", "localize", "interpret"),
    ("compress", "shrink", "zip", "reduce size of"),
    ("encrypt", "secure", "lock", "protect"),
    ("schedule", "plan", "book", "arrange"),
    ("share", "send", "distribute", "forward"),
    ("archive", "store", "file away", "preserve"),
    ("tag", "label", "annotate", "mark"),
    ("rank", "score", "order by relevance", "prioritize"),
    ("filter", "screen", "sift", "narrow down"),
    ("sort", "arrange in order", "order", "sequence"),
    ("monitor", "watch", "track", "observe"),
    ("backup", "copy", "snapshot", "duplicate"),
    ("restore", "recover", "roll back", "bring back"),
    ("sync", "synchronize", "mirror", "reconcile"),
    ("analyze", "inspect", "examine", "study"),
    ("classify", "categorize", "group", "sort into classes"),
    ("extract", "pull out", "parse", "scrape"),
    ("render", "draw", "visualize", "plot"),
    ("upload", "publish", "post", "push"),
    ("download", "fetch", "retrieve", "pull"),
)

#: Skill-specific keywords (modifiers and objects), shared across families on purpose.
KEYWORDS: tuple[str, ...] = tuple(
    """
    quarterly weekly daily monthly annual draft final urgent private public shared personal
    team corporate legacy duplicate broken missing expired pending archived recent old new
    large small bulk single batch nested encrypted compressed scanned handwritten printed
    thumbnail preview attachment metadata summary outline template header footer caption
    subtitle transcript timestamp timezone deadline reminder budget forecast estimate total
    discount coupon refund tax currency exchange ledger balance account profile avatar banner
    logo icon font color palette layout border margin column grid chart graph histogram table
    matrix vector index catalog inventory stock warehouse shipment package delivery tracking
    barcode label sticker coupon voucher ticket seat boarding gate terminal luggage passport
    visa permit license certificate signature stamp seal notary witness deposit loan mortgage
    interest dividend bond option futures crypto wallet token ledger audit compliance policy
    privacy consent cookie session cache buffer queue stream batch pipeline workflow trigger
    webhook endpoint payload header status error warning alert notification badge counter
    streak milestone goal target threshold limit quota ratio percentage average median trend
    anomaly outlier spike drift baseline benchmark version release patch hotfix changelog
    roadmap backlog sprint ticket issue comment review approval feedback rating survey poll
    vote ballot petition campaign newsletter digest bulletin flyer brochure poster banner
    invitation greeting holiday birthday anniversary wedding festival concert exhibition tour
    museum gallery landmark beach mountain river island village downtown suburb airport harbor
    """.split()
)

#: Boilerplate fragments that pad skill descriptions (shared by many skills).
DESCRIPTION_BOILERPLATE: tuple[str, ...] = (
    "a reliable tool for everyday work",
    "use this skill when the user asks",
    "handles the common cases quickly",
    "supports batch operation and retries",
    "works with most standard formats",
    "returns a structured result",
    "fast and easy to use",
    "designed for productivity",
)

#: Openers of user queries.
QUERY_OPENERS: tuple[str, ...] = (
    "please",
    "can you",
    "help me",
    "i need to",
    "i want to",
    "could you",
    "quickly",
    "go ahead and",
)

#: Vague request phrases. A query phrased generically carries one of them; black-hole
#: descriptions advertise the same generic help, which is how they capture such queries.
GENERIC_PHRASES: tuple[str, ...] = (
    "help with any task",
    "any request you can",
    "help with anything",
    "whenever you need help",
    "for any task",
)

#: Data formats used to build the input/output state types of skills.
FORMATS: tuple[str, ...] = (
    "file",
    "record",
    "list",
    "table",
    "report",
    "stream",
    "bundle",
    "snapshot",
)
