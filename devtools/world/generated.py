"""Endless news for the sample world: after the scripted articles (devtools/world/content.py, the last released
at 1,500 virtual seconds) a new event every :data:`EVERY_S` virtual seconds, for as long as the world runs.

Deterministic: event ``k`` is a function of ``(seed, k)`` only (``random.Random(f"{seed}/{k}")``), so a world
restarted with the same seed and clock (devtools/world/server.py keeps both in ``world.json``) serves the same
articles at the same times, and a rerun of ``newsroom run`` fetches nothing twice.

Each event: a kind (storm, factory, election, discovery), fictional names drawn from per-language pools, a language
(three events in five English, then Spanish, German or French in turn), 2-4 reports from distinct publishers of
that language within a few virtual minutes (each in its own words, sharing the names, so the stories job clusters
them), a follow-up by one of them :data:`FOLLOW_UP_S` later (the story keeps developing), and, every third event,
a correction of the first report's headline :data:`CORRECTION_S` after it (same URL and guid: the ingest job
fetches it once more, as a new version). Articles have the fields of content.py (``id``, ``pub``, ``at``,
``section``, ``lang``, ``author``, ``headline``, ``paras``, ``correction``) plus ``event`` (the event number).
"""

from __future__ import annotations

import random

START_S = 1800  # virtual seconds: the first generated event, after the scripted content
EVERY_S = 240  # one new event every 4 virtual minutes (24 s of wall clock at the default x10)
FOLLOW_UP_S = 1500
CORRECTION_S = 900
CORRECTED_EVERY = 3

PUBLISHERS = {
    "en": ("wirepress", "daily-herald", "pacific-times", "capital-post", "london-chronicle", "toronto-ledger"),
    "es": ("agencia-sur", "el-diario-central"),
    "de": ("berliner-blatt",),
    "fr": ("le-quotidien", "gazette-de-lyon"),
}
LANGUAGES = ("en", "en", "en", "es", "en", "de", "en", "en", "fr", "en")  # by k % 10
AUTHORS = {
    "en": ("Alex Moreno", "Jordan Price", "Sam Okafor", "Taylor Nguyen", "Chris Lindqvist", "Morgan Hale"),
    "es": ("Lucía Ferrer", "Diego Navarro", "Carmen Ruiz", "Pablo Ortega"),
    "de": ("Anna Brandt", "Felix Hartmann", "Lena Wolff"),
    "fr": ("Claire Dubois", "Julien Marchand", "Sophie Lambert"),
}
PLACES = {
    "en": ("Harlow Point", "Millbrook", "Eastvale", "Port Brennan", "Cedar Falls", "Ashford Bay", "Kingsmere"),
    "es": ("Villaverde del Río", "Puerto Salinas", "San Esteban de Mar", "Montealto", "Valdeluna"),
    "de": ("Neustadt am See", "Birkenfeld", "Hohenwalde", "Lindau an der Aue", "Steinbach"),
    "fr": ("Saint-Aubin-sur-Loire", "Montclair", "Val-de-Brume", "Roche-Haute", "Bellerive"),
}
COMPANIES = ("Norwind Energy", "Halden Steel", "Brightwater Foods", "Caldera Chips", "Solvane Pharma", "Ostra Rail")
PEOPLE = ("Elena Marsh", "Tomas Reyes", "Ingrid Falk", "Omar Haddad", "Yuki Tanabe", "Rafael Costa", "Mira Jansen")
INSTITUTES = ("Northgate University", "the Aldren Institute", "Kestrel Observatory", "the Marlowe Research Centre")
FINDS = {
    "en": ("a new species of deep-sea coral", "a comet on an unusual orbit", "a faster way to recycle batteries"),
    "es": (
        "una nueva especie de coral de profundidad",
        "un cometa con una órbita inusual",
        "un método más rápido para reciclar baterías",
    ),
    "de": (
        "eine neue Tiefseekorallenart",
        "einen Kometen auf ungewöhnlicher Bahn",
        "ein schnelleres Verfahren zum Batterierecycling",
    ),
    "fr": (
        "une nouvelle espèce de corail des profondeurs",
        "une comète à l'orbite inhabituelle",
        "une méthode plus rapide pour recycler les batteries",
    ),
}
SECTIONS = {"storm": "climate", "factory": "business", "election": "politics", "discovery": "science"}

# kind -> language -> (headlines, follow-up headline, paragraphs); placeholders: {place} {company} {person}
# {institute} {find} {n} (a number) {m} (a smaller one).
TEXTS = {
    "storm": {
        "en": (
            (
                "Storm cuts power to {n},000 homes in {place}",
                "{place} storm leaves {n},000 homes without power",
                "Thousands in the dark as storm sweeps through {place}",
                "{place} cleans up after storm knocks out power",
            ),
            "{place} storm: power back for most homes, {m} roads still closed",
            (
                "A storm with gusts of up to {m}0 miles per hour swept through {place} overnight, cutting power to about "
                "{n},000 homes, the local utility said.",
                "Fallen trees blocked {m} main roads and schools in {place} stayed closed on the morning after the storm.",
                "Crews from neighbouring towns were called in; the utility expects most homes in {place} to have power "
                "again within two days.",
            ),
        ),
        "es": (
            (
                "Una tormenta deja sin luz a {n}.000 hogares en {place}",
                "Miles de hogares sin electricidad en {place} tras el temporal",
            ),
            "Temporal en {place}: vuelve la luz a la mayoría de los hogares",
            (
                "Una tormenta con rachas de hasta {m}0 kilómetros por hora azotó {place} durante la noche y dejó sin "
                "electricidad a unos {n}.000 hogares, según la compañía eléctrica.",
                "La caída de árboles cortó {m} carreteras principales y los colegios de {place} permanecieron cerrados.",
            ),
        ),
        "de": (
            ("Sturm legt Strom für {n}.000 Haushalte in {place} lahm",),
            "Sturm in {place}: Die meisten Haushalte haben wieder Strom",
            (
                "Ein Sturm mit Böen von bis zu {m}0 Kilometern pro Stunde ist in der Nacht über {place} gezogen und hat "
                "rund {n}.000 Haushalte vom Stromnetz getrennt, teilte der Versorger mit.",
                "Umgestürzte Bäume blockierten {m} Hauptstraßen; die Schulen in {place} blieben geschlossen.",
            ),
        ),
        "fr": (
            (
                "Une tempête prive {n} 000 foyers d'électricité à {place}",
                "{place} : des milliers de foyers sans courant après la tempête",
            ),
            "Tempête à {place} : le courant rétabli pour la plupart des foyers",
            (
                "Une tempête avec des rafales jusqu'à {m}0 kilomètres par heure a traversé {place} dans la nuit, privant "
                "d'électricité environ {n} 000 foyers, selon le distributeur.",
                "Des arbres tombés ont bloqué {m} routes principales et les écoles de {place} sont restées fermées.",
            ),
        ),
    },
    "factory": {
        "en": (
            (
                "{company} to open plant in {place}, creating {n}00 jobs",
                "{company} picks {place} for new factory",
                "{place} wins {company} factory and {n}00 jobs",
                "New {company} plant brings {n}00 jobs to {place}",
            ),
            "{company}'s {place} plant: first {m}0 hires announced",
            (
                "{company} said on Tuesday it will build a factory in {place}, a project that will create about {n}00 "
                "jobs when it opens in two years.",
                "The company chose {place} over {m} other sites because of its rail links and a trained workforce, "
                "its chief executive said.",
                "Local officials in {place} said the plant was the largest investment in the town for a decade.",
            ),
        ),
        "es": (
            ("{company} abrirá una planta en {place} con {n}00 empleos", "{place} gana la nueva fábrica de {company}"),
            "Fábrica de {company} en {place}: primeras {m}0 contrataciones",
            (
                "{company} anunció el martes que construirá una fábrica en {place}, un proyecto que creará unos {n}00 "
                "empleos cuando abra dentro de dos años.",
                "La empresa eligió {place} frente a otros {m} emplazamientos por sus conexiones ferroviarias.",
            ),
        ),
        "de": (
            ("{company} baut Werk in {place} und schafft {n}00 Stellen",),
            "Werk von {company} in {place}: erste {m}0 Einstellungen",
            (
                "{company} hat am Dienstag angekündigt, in {place} ein Werk zu bauen, das bei seiner Eröffnung in zwei "
                "Jahren rund {n}00 Arbeitsplätze schaffen soll.",
                "Das Unternehmen habe {place} wegen der Bahnanbindung {m} anderen Standorten vorgezogen.",
            ),
        ),
        "fr": (
            (
                "{company} va ouvrir une usine à {place} avec {n}00 emplois",
                "{place} décroche la nouvelle usine de {company}",
            ),
            "Usine {company} de {place} : les {m}0 premières embauches",
            (
                "{company} a annoncé mardi la construction d'une usine à {place}, un projet qui créera environ {n}00 "
                "emplois à son ouverture dans deux ans.",
                "L'entreprise a préféré {place} à {m} autres sites pour ses liaisons ferroviaires.",
            ),
        ),
    },
    "election": {
        "en": (
            (
                "{person} elected mayor of {place}",
                "{person} wins {place} mayoral race by {m} points",
                "{place} elects {person} as its new mayor",
                "Voters in {place} choose {person} for mayor",
            ),
            "{place} mayor-elect {person} names first {m} deputies",
            (
                "{person} was elected mayor of {place} on Sunday with {n}{m} percent of the vote, ending twelve years "
                "of the outgoing mayor's party in office.",
                "Turnout in {place} was the highest in two decades. {person} promised to fix the town's buses and "
                "build {m},000 homes.",
                "The outgoing mayor conceded late on Sunday and congratulated {person} on a clear win.",
            ),
        ),
        "es": (
            ("{person}, elegida alcaldesa de {place}", "{person} gana la alcaldía de {place} por {m} puntos"),
            "{person} presenta a sus primeros {m} concejales en {place}",
            (
                "{person} fue elegida alcaldesa de {place} el domingo con el {n}{m} por ciento de los votos.",
                "La participación en {place} fue la más alta en dos décadas. {person} prometió mejorar los autobuses.",
            ),
        ),
        "de": (
            ("{person} zur Bürgermeisterin von {place} gewählt",),
            "{place}: Die neue Bürgermeisterin {person} stellt {m} Stellvertreter vor",
            (
                "{person} ist am Sonntag mit {n}{m} Prozent der Stimmen zur Bürgermeisterin von {place} gewählt worden.",
                "Die Wahlbeteiligung in {place} war die höchste seit zwanzig Jahren.",
            ),
        ),
        "fr": (
            ("{person} élue maire de {place}", "{place} : {person} remporte la mairie avec {m} points d'avance"),
            "{place} : la nouvelle maire {person} présente ses {m} adjoints",
            (
                "{person} a été élue maire de {place} dimanche avec {n}{m} % des voix.",
                "La participation à {place} a été la plus forte depuis vingt ans. {person} a promis de meilleurs bus.",
            ),
        ),
    },
    "discovery": {
        "en": (
            (
                "Scientists at {institute} find {find}",
                "{institute} team reports {find}",
                "Researchers announce {find}",
                "{find}: what the {institute} discovery means",
            ),
            "{institute} discovery confirmed by {m} other laboratories",
            (
                "Scientists at {institute} said on Wednesday they had found {find}, a result published after {m} years "
                "of work.",
                "The team of {n}0 researchers said the finding would need to be confirmed by other laboratories.",
                "Outside experts called the {institute} result surprising but carefully done.",
            ),
        ),
        "es": (
            ("Científicos de {institute} hallan {find}", "Un equipo de {institute} anuncia {find}"),
            "Otros {m} laboratorios confirman el hallazgo de {institute}",
            (
                "Científicos de {institute} anunciaron el miércoles que habían encontrado {find}, tras {m} años de trabajo.",
                "El equipo de {n}0 investigadores dijo que otros laboratorios deberán confirmar el resultado.",
            ),
        ),
        "de": (
            ("Forscher von {institute} entdecken {find}",),
            "{m} weitere Labore bestätigen die Entdeckung von {institute}",
            (
                "Wissenschaftler von {institute} haben nach eigenen Angaben {find} entdeckt, nach {m} Jahren Arbeit.",
                "Das Team aus {n}0 Forschern sagte, andere Labore müssten das Ergebnis bestätigen.",
            ),
        ),
        "fr": (
            ("Des chercheurs de {institute} découvrent {find}", "{institute} annonce {find}"),
            "{m} autres laboratoires confirment la découverte de {institute}",
            (
                "Des scientifiques de {institute} ont annoncé mercredi avoir trouvé {find}, après {m} ans de travail.",
                "L'équipe de {n}0 chercheurs a indiqué que d'autres laboratoires devront confirmer le résultat.",
            ),
        ),
    },
}
KINDS = tuple(TEXTS)


def event_time(k: int) -> int:
    return START_S + k * EVERY_S


def first_event_after(virtual_s: float) -> int:
    """The smallest event number whose first report is released after ``virtual_s``."""
    return max(0, int((virtual_s - START_S) // EVERY_S) + 1)


def event_articles(seed: int, k: int) -> list[dict]:
    """The articles of event ``k`` (its reports, the follow-up, and maybe a correction of the first report)."""
    rng = random.Random(f"{seed}/{k}")
    lang = LANGUAGES[k % len(LANGUAGES)]
    kind = KINDS[rng.randrange(len(KINDS))]
    names = {
        "place": rng.choice(PLACES[lang]),
        "company": rng.choice(COMPANIES),
        "person": rng.choice(PEOPLE),
        "institute": rng.choice(INSTITUTES),
        "find": rng.choice(FINDS[lang]),
        "n": rng.randint(2, 9),
        "m": rng.randint(2, 5),
    }
    headlines, follow_up, paras = TEXTS[kind][lang]
    pubs = list(PUBLISHERS[lang])
    rng.shuffle(pubs)
    pubs = pubs[: rng.randint(min(2, len(pubs)), min(4, len(pubs)))]
    t0 = event_time(k)
    out = []
    for j, pub in enumerate(pubs):
        own = [paras[0], *rng.sample(paras[1:], len(paras) - 1)]  # each report in its own order
        headline = headlines[j % len(headlines)].format(**names)
        out.append(
            {
                "id": f"gen-{seed}-{k}-{j}",
                "event": k,
                "pub": pub,
                "at": t0 + j * rng.randint(20, 90),
                "section": SECTIONS[kind],
                "lang": lang,
                "author": rng.choice(AUTHORS[lang]),
                "headline": headline[0].upper() + headline[1:],
                "paras": [p.format(**names) for p in own],
            }
        )
    if k % CORRECTED_EVERY == 0:
        first = out[0]
        n = str(names["n"])
        fixed = first["headline"].replace(n, str(names["n"] + 1), 1) if n in first["headline"] else None
        first["correction"] = {"at": first["at"] + CORRECTION_S, "headline": fixed or first["headline"] + " (updated)"}
    follow = follow_up.format(**names)
    out.append(
        {
            "id": f"gen-{seed}-{k}-f",
            "event": k,
            "pub": pubs[-1],
            "at": t0 + FOLLOW_UP_S,
            "section": SECTIONS[kind],
            "lang": lang,
            "author": rng.choice(AUTHORS[lang]),
            "headline": follow[0].upper() + follow[1:],
            "paras": [p.format(**names) for p in reversed(paras)],
        }
    )
    return out


def articles_between(seed: int, after_s: float, until_s: float) -> list[dict]:
    """Every article of the events whose first report falls in (after_s, until_s] virtual seconds."""
    out = []
    k = first_event_after(after_s)
    while event_time(k) <= until_s:
        out += event_articles(seed, k)
        k += 1
    return out
