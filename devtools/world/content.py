"""Articles of the local publisher world, written for this project (fictional events, places and people).

Each article: ``id`` (unique slug), ``pub`` (publisher id of transforms/data/publishers.json), ``at`` (release time
in *virtual* seconds after the world starts; <= 0 means already published when it starts), ``section``, ``lang``,
``author``, ``headline``, ``paras`` (body paragraphs). Optional flags:

- ``copy_of``: a syndicated wire copy; headline and body are the wire's (a credit line is added).
- ``amp``: the feed links the AMP copy (/amp/...), whose rel=canonical points to the main page.
- ``tracking``: the feed link carries utm_* tracking parameters.
- ``redirect``: the feed links a redirect wrapper (/go/...) that answers 301 to the page.
- ``members``: the page lives under /members/, which robots.txt disallows.
- ``correction``: ``{"at": t, "headline": ...}``: the headline is corrected at virtual time t (same URL and guid).
- ``future_days``: the page states a publication date that many days in the future.
- ``translation_of``: the article translates another one of the world (another publisher, another language): the
  stories job must link their two stories across languages (tests/devtools/test_run.py).

Events: E1 the Calder Bay earthquake (the breaking burst: 11 English originals from 7 publishers of authority
> 0.5 within 4 virtual minutes, wire copies, and Spanish, German and French reports); E2 the Aurora Motors recall
(wire original, syndicated copies with tracking-parameter links, independent reports); E3 the Lumen Orbit phone
(an AMP copy); E4 Springfield's riverside park (a redirect wrapper, a robots-disallowed page); E5 a drought bill
whose headline is corrected; E6 a cup final (es/de/en); E7 an air-traffic strike (fr); E8 a northern rail strike
(en, gb); E9 Berlin housing (de); E10 a content farm (future date, a feed whose ETag changes on every request);
E11 Mumbai's monsoon (news sitemap); E12 the Port Almera desalination plant (an English report and its Spanish
translation, released early in a run: the translated pair the cross-language links must join, and a second English
report); E13 a ferry
aground off Gull Island (two reports the writer keeps apart and the next repair tick merges: :data:`MERGED_PAIR`);
E14 Port Almera's mayor re-elected over the plant's water bills (a second episode of E12's subject, a storyline:
:data:`STORYLINE_EPISODES`).
"""

from __future__ import annotations

QUAKE = "Calder Bay"

# Publishers whose articles sit behind a metered paywall: their pages state schema.org ``isAccessibleForFree``
# false (on the NewsArticle, with the paywalled part named by ``hasPart``, Google's paywall markup), so a local run
# shows the ``paid`` card label and a free article winning a near-tie for representative (README "Editions").
# Daily Herald's near-ties with Pacific Times (0.85 / 0.8 authority, both us-en) are the ones to watch.
PAYWALLED = frozenset({"daily-herald", "london-chronicle"})

# E13's two reports: (first, second). The second scores between the repair's merge bar and the writer's join bar
# against the first, so the writer starts a story for it and the next repair tick (every 10 minutes of event time)
# merges it into the first's story: the merged id a local run's reader can try (its 301 to the survivor).
MERGED_PAIR = ("ferry-aground-gull-island", "stranded-ferry-passengers-ashore")

# E12's English reports and E14's: two stories (a plant opens; its city's mayor is re-elected over its water bills)
# that share the city, the firm and the mayor, so the storyline stage links them: a storyline of two episodes.
STORYLINE_EPISODES = (
    ("port-almera-solar-desalination-plant", "aqualux-plant-night-shift-port-almera"),
    ("port-almera-mayor-reelected", "vargas-victory-port-almera-council"),
)

ARTICLES: list[dict] = [
    # ---------------------------------------------------------------- E2 Aurora Motors recall (business, backlog)
    {
        "id": "aurora-motors-recall-120000-suvs",
        "pub": "wirepress",
        "at": -2400,
        "section": "business",
        "lang": "en",
        "author": "Dana Whitfield",
        "headline": "Aurora Motors recalls 120,000 electric SUVs over battery cooling fault",
        "paras": [
            "Aurora Motors is recalling about 120,000 of its Vega electric sport-utility vehicles after finding that "
            "a coolant pump in the battery pack can fail without warning, the carmaker said on Monday.",
            "The company said a faulty seal lets the pump seize, which can cause the battery to overheat and the car "
            "to drop into a reduced-power mode while driving. It is aware of 37 incidents and no injuries.",
            "Owners of Vega models built between March 2024 and January 2025 will be contacted by mail. Dealers will "
            "replace the pump free of charge, a repair that takes about two hours.",
            "Aurora shares fell 3.2 percent in early trading. Analysts said the cost of the recall, estimated at "
            "$90 million, was manageable but came at a bad time as the company fights for market share.",
        ],
    },
    {
        "id": "aurora-vega-recall-wire",
        "pub": "capital-post",
        "at": -2000,
        "section": "business",
        "lang": "en",
        "author": "WirePress",
        "copy_of": "aurora-motors-recall-120000-suvs",
        "tracking": True,
    },
    {
        "id": "aurora-recall-springfield",
        "pub": "springfield-gazette",
        "at": -1900,
        "section": "business",
        "lang": "en",
        "author": "WirePress",
        "copy_of": "aurora-motors-recall-120000-suvs",
        "tracking": True,
    },
    {
        "id": "aurora-recall-what-owners-need-to-know",
        "pub": "daily-herald",
        "at": -1500,
        "section": "business",
        "lang": "en",
        "author": "Marcus Bell",
        "headline": "Aurora's Vega recall: what 120,000 owners need to know about the battery pump fix",
        "paras": [
            "If you bought an Aurora Vega in the last two years, a letter is probably on its way. The carmaker's "
            "recall covers roughly 120,000 vehicles with a battery coolant pump that can seize.",
            "The symptom drivers report most often is a sudden loss of power on the highway, with a dashboard "
            "warning about battery temperature. Aurora says the car remains steerable and can be pulled over safely.",
            "Dealers in the Northeast told the Herald they expect parts by the end of the month. Until then, Aurora "
            "advises owners to avoid fast charging above 80 percent, which stresses the cooling loop.",
            "Consumer advocates welcomed the recall but asked why it took 37 reported failures before the company "
            "acted. Aurora said it had needed time to trace the problem to a single supplier's seal.",
        ],
    },
    {
        "id": "aurora-supplier-seal-fault",
        "pub": "pacific-times",
        "at": -1200,
        "section": "business",
        "lang": "en",
        "author": "Priya Raman",
        "headline": "Supplier seal at the heart of Aurora Motors' electric SUV recall",
        "paras": [
            "The defect behind Aurora Motors' recall of 120,000 Vega SUVs traces back to a rubber seal made by a "
            "single supplier in Ohio, according to documents the carmaker filed with safety regulators.",
            "Engineers found that the seal hardened at low temperatures, letting coolant reach the pump's motor. "
            "Aurora changed suppliers in February, which is why later vehicles are not affected.",
            "The filing puts the number of confirmed pump failures at 37. Aurora estimates that fewer than one "
            "percent of the recalled vehicles carry a defective seal, but it will replace every pump.",
        ],
    },
    # ---------------------------------------------------------------- E3 Lumen Orbit (technology, AMP copy)
    {
        "id": "lumen-labs-orbit-satellite-phone",
        "pub": "pacific-times",
        "at": -3000,
        "section": "technology",
        "lang": "en",
        "author": "Kevin Osei",
        "amp": True,
        "headline": "Lumen Labs unveils Orbit, a pocket satellite phone that texts from anywhere",
        "paras": [
            "Lumen Labs on Tuesday unveiled Orbit, a phone the size of a deck of cards that sends text messages and "
            "shares its location over satellites when there is no mobile signal.",
            "The device pairs with an ordinary smartphone over Bluetooth and costs $249, plus a $12 monthly plan. "
            "Lumen says a message takes between 20 seconds and two minutes to go through, depending on the sky.",
            "Hikers, sailors and rural workers are the obvious buyers, chief executive Mara Lindqvist said at the "
            "launch in San Jose, but she expects emergency services to be the biggest customer.",
            "Orbit ships in the United States and Canada in six weeks, with Europe to follow next year once "
            "regulators approve the radio.",
        ],
    },
    {
        "id": "orbit-hands-on",
        "pub": "toronto-ledger",
        "at": -2600,
        "section": "technology",
        "lang": "en",
        "author": "Aisha Grant",
        "headline": "Hands-on with Lumen's Orbit: satellite texting that actually works in the backcountry",
        "paras": [
            "We took Lumen Labs' new Orbit satellite messenger into the hills north of Toronto, well out of reach of "
            "any mobile tower, and it delivered every message we sent.",
            "The first text took 48 seconds to go through under a partly cloudy sky; later ones took about half a "
            "minute. The companion app shows a simple arrow telling you where to point the device.",
            "At $249 plus a monthly plan, Orbit is cheaper than most satellite phones, though it only does text and "
            "location. For anyone who spends weekends off the grid, it is the most practical option we have tried.",
        ],
    },
    {
        "id": "lumen-orbit-europe",
        "pub": "london-chronicle",
        "at": -2200,
        "section": "technology",
        "lang": "en",
        "author": "Oliver Grant",
        "headline": "Lumen's Orbit satellite messenger will not reach Britain until next year",
        "paras": [
            "British walkers and sailors hoping to buy Lumen Labs' new Orbit satellite messenger will have to wait: "
            "the $249 device launches only in North America this summer.",
            "Lumen said it was still seeking approval for the device's radio from European and British regulators. "
            "The company expects to launch in the UK early next year, at a price still to be set.",
            "Rival services already offer satellite texting on some smartphones, but Orbit works with almost any "
            "handset, which analysts say could win over older phone owners.",
        ],
    },
    # ---------------------------------------------------------------- E6 cup final (sport; es, de, en)
    {
        "id": "real-castilla-gana-la-copa",
        "pub": "agencia-sur",
        "at": -3300,
        "section": "sports",
        "lang": "es",
        "author": "Lucía Ferrer",
        "headline": "El Real Castilla gana la Copa tras remontar ante el Atlético Levante (2-1)",
        "paras": [
            "El Real Castilla conquistó este sábado la Copa al vencer por 2-1 al Atlético Levante en una final "
            "disputada en el estadio de La Cartuja, tras ir perdiendo al descanso.",
            "El Levante se adelantó en el minuto 31 con un cabezazo de Iker Sanz. En la segunda parte, el "
            "delantero Mateo Ríos empató de penalti y, a falta de cinco minutos, marcó el gol de la victoria.",
            "Es el primer título del Real Castilla en once años. Su entrenador, Javier Olmedo, dedicó la copa a la "
            "afición: «Nunca dejaron de creer en este equipo».",
        ],
    },
    {
        "id": "copa-final-cronica",
        "pub": "el-diario-central",
        "at": -3000,
        "section": "sports",
        "lang": "es",
        "author": "Pablo Medina",
        "headline": "Mateo Ríos da la Copa al Real Castilla con un doblete en La Cartuja",
        "paras": [
            "Mateo Ríos fue el gran protagonista de la final de Copa: el delantero marcó los dos goles con los que "
            "el Real Castilla derrotó 2-1 al Atlético Levante y levantó su primer trofeo desde hace once años.",
            "El primer gol llegó de penalti tras una mano en el área; el segundo, con un disparo cruzado en el "
            "minuto 85 que desató la locura en la grada castellana.",
            "El Levante, que había dominado la primera parte, reclamó un penalti en el descuento que el árbitro no "
            "concedió tras consultar el vídeo.",
        ],
    },
    {
        "id": "pokalfinale-spanien-rios",
        "pub": "berliner-blatt",
        "at": -2800,
        "section": "sports",
        "lang": "de",
        "author": "Jonas Keller",
        "headline": "Spanisches Pokalfinale: Doppelpack von Ríos entscheidet für Real Castilla",
        "paras": [
            "Real Castilla hat das spanische Pokalfinale mit 2:1 gegen Atlético Levante gewonnen. Matchwinner war "
            "Stürmer Mateo Ríos, der beide Tore erzielte.",
            "Levante war in der ersten Halbzeit durch einen Kopfball von Iker Sanz in Führung gegangen. Ríos glich "
            "per Elfmeter aus und traf fünf Minuten vor Schluss zum Sieg.",
            "Für Ríos, der im Sommer von mehreren Bundesligisten umworben wurde, war es das wichtigste Spiel seiner "
            "Karriere. Sein Vertrag in Castilla läuft noch bis 2027.",
        ],
    },
    # ---------------------------------------------------------------- E7 air-traffic strike (fr)
    {
        "id": "greve-controleurs-aeriens",
        "pub": "le-quotidien",
        "at": -2700,
        "section": "business",
        "lang": "fr",
        "author": "Claire Dubois",
        "headline": "Grève des contrôleurs aériens : 40 % des vols annulés à Paris jeudi",
        "paras": [
            "La direction de l'aviation civile a demandé aux compagnies d'annuler 40 % de leurs vols au départ et à "
            "l'arrivée des aéroports parisiens jeudi, en raison d'une grève des contrôleurs aériens.",
            "Les syndicats protestent contre un projet de réforme des horaires de travail qu'ils jugent dangereux "
            "pour la sécurité. Le ministère des Transports a proposé une réunion mercredi soir.",
            "Les passagers sont invités à vérifier le statut de leur vol avant de se rendre à l'aéroport. Les "
            "compagnies doivent proposer un remboursement ou un report sans frais.",
        ],
    },
    {
        "id": "greve-aerien-lyon",
        "pub": "gazette-de-lyon",
        "at": -2100,
        "section": "business",
        "lang": "fr",
        "author": "Hugo Martin",
        "headline": "Grève dans le ciel : l'aéroport de Lyon touché à son tour, un vol sur trois annulé",
        "paras": [
            "La grève des contrôleurs aériens touchera aussi Lyon jeudi : un vol sur trois sera annulé à l'aéroport "
            "Saint-Exupéry, selon la préfecture.",
            "Les liaisons vers Paris et Nice sont les plus concernées. Les trains à grande vitesse affichent déjà "
            "complet pour la journée, selon la compagnie ferroviaire.",
            "Les contrôleurs contestent une réforme de leurs horaires. Une réunion avec le ministère est prévue "
            "mercredi soir, dernière chance d'éviter le mouvement.",
        ],
    },
    # ---------------------------------------------------------------- E8 northern rail strike (gb)
    {
        "id": "rail-strike-north-friday",
        "pub": "london-chronicle",
        "at": -1800,
        "section": "nation",
        "lang": "en",
        "author": "Harriet Cole",
        "headline": "Rail strike to halt most trains across northern England on Friday",
        "paras": [
            "Most train services across northern England will be cancelled on Friday after signal workers voted to "
            "walk out in a dispute over staffing, the rail operator said.",
            "Only one train an hour will run between Leeds and Manchester, and routes around Newcastle and York will "
            "close entirely from 7am. Passengers are told not to travel unless necessary.",
            "The union says cuts to signal-box staff put safety at risk; the operator says the changes follow new "
            "technology and that no jobs will be lost. Talks broke down on Wednesday evening.",
        ],
    },
    {
        "id": "strike-commuters-newcastle",
        "pub": "northern-echo",
        "at": -1300,
        "section": "nation",
        "lang": "en",
        "author": "Gemma Reid",
        "headline": "Newcastle commuters brace for Friday with no trains as signal workers strike",
        "paras": [
            "Commuters in Newcastle are making other plans for Friday, when no trains will run on lines around the "
            "city because of a strike by signal workers.",
            "Bus operators are adding extra services on the busiest routes into the city centre, and several large "
            "employers have told staff to work from home.",
            "Signal workers picketing outside Central Station said they were sorry for the disruption but had been "
            "left with no choice after talks over staffing broke down.",
        ],
    },
    # ---------------------------------------------------------------- E9 Berlin housing (de)
    {
        "id": "berlin-mieten-senat",
        "pub": "berliner-blatt",
        "at": -1000,
        "section": "nation",
        "lang": "de",
        "author": "Sabine Vogt",
        "headline": "Berliner Senat beschließt neues Programm gegen steigende Mieten",
        "paras": [
            "Der Berliner Senat hat am Dienstag ein Programm beschlossen, mit dem landeseigene Wohnungsunternehmen "
            "in den nächsten fünf Jahren 25.000 Wohnungen kaufen oder bauen sollen.",
            "Die Mieten in diesen Wohnungen dürfen nach dem Beschluss höchstens um zwei Prozent pro Jahr steigen. "
            "Finanziert werden soll das Programm mit Krediten in Höhe von 4,5 Milliarden Euro.",
            "Die Opposition kritisierte die Pläne als zu teuer. Mieterverbände begrüßten den Beschluss, forderten "
            "aber mehr Tempo beim Neubau.",
        ],
    },
    # ---------------------------------------------------------------- E4 Springfield (local)
    {
        "id": "riverside-park-approved",
        "pub": "springfield-gazette",
        "at": -900,
        "section": "nation",
        "lang": "en",
        "author": "Tom Novak",
        "redirect": True,
        "headline": "Springfield council approves $14 million riverside park on old rail yard",
        "paras": [
            "The Springfield city council voted 7-2 on Tuesday night to turn the abandoned rail yard along the "
            "river into a 30-acre park with trails, a boat launch and an open-air stage.",
            "The $14 million project will be paid for with a state grant and a bond approved by voters last year. "
            "Construction is due to start in the spring and take about two years.",
            "Residents who spoke at the meeting mostly supported the plan, though some asked the council to keep "
            "part of the historic roundhouse, which the design now includes.",
        ],
    },
    {
        "id": "members-council-budget-analysis",
        "pub": "springfield-gazette",
        "at": 120,
        "section": "nation",
        "lang": "en",
        "author": "Tom Novak",
        "members": True,
        "headline": "Members only: inside the council's budget talks",
        "paras": ["This analysis is available to members only."],
    },
    # ---------------------------------------------------------------- E10 content farm (future date, ETag churn)
    {
        "id": "ten-foods-doctors-never-eat",
        "pub": "content-farm",
        "at": -600,
        "section": "health",
        "lang": "en",
        "author": "Staff",
        "headline": "10 foods doctors never eat (number 7 will shock you)",
        "paras": [
            "You may be surprised to learn which everyday foods some doctors avoid. Here is our list of ten.",
            "Number one is processed meat. Number two is sugary cereal. Number seven is something you eat every "
            "morning, and it will shock you.",
        ],
    },
    {
        "id": "future-dated-miracle-diet",
        "pub": "content-farm",
        "at": 300,
        "section": "health",
        "lang": "en",
        "author": "Staff",
        "future_days": 3,
        "headline": "The miracle diet everyone will be talking about next week",
        "paras": [
            "This diet has not even been announced yet, but we already know it will change your life.",
            "Experts agree it is the most talked-about diet of the year, according to our own survey of readers.",
        ],
    },
    # ---------------------------------------------------------------- E11 Mumbai monsoon (sitemap)
    {
        "id": "mumbai-monsoon-local-trains",
        "pub": "mumbai-daily",
        "at": -1500,
        "section": "nation",
        "lang": "en",
        "author": "Rohan Deshpande",
        "headline": "Heavy monsoon rain floods low-lying Mumbai; some local train services suspended",
        "paras": [
            "Heavy monsoon rain flooded low-lying parts of Mumbai on Wednesday, forcing the suspension of local "
            "train services on two lines during the morning rush.",
            "The weather office recorded 210 mm of rain in 12 hours in the western suburbs and issued an orange "
            "alert for the next two days. Schools in several wards were closed.",
            "The municipal corporation said its pumps were working at full capacity and urged residents to avoid "
            "waterlogged underpasses. Services resumed on the harbour line by afternoon.",
        ],
    },
    # ---------------------------------------------------------------- E5 drought bill (corrected headline)
    {
        "id": "senate-passes-drought-relief-bill",
        "pub": "daily-herald",
        "at": 240,
        "section": "nation",
        "lang": "en",
        "author": "Linda Park",
        "correction": {"at": 1200, "headline": "State senate passes drought relief bill by 24 votes to 14"},
        "headline": "State senate passes drought relief bill by 26 votes to 12",
        "paras": [
            "The state senate on Thursday passed a $600 million drought relief bill that pays farmers to leave "
            "fields fallow and funds new water recycling plants in three counties.",
            "The bill now goes to the assembly, where leaders have promised a vote before the summer recess. The "
            "governor has said she will sign it.",
            "Farm groups praised the fallowing payments, while environmental groups said the bill did too little to "
            "protect river flows for salmon.",
        ],
    },
    # ---------------------------------------------------------------- E1 Calder Bay earthquake: the breaking burst
    {
        "id": "calder-bay-earthquake-flash",
        "pub": "wirepress",
        "at": 600,
        "section": "world",
        "lang": "en",
        "author": "WirePress staff",
        "headline": f"Magnitude 7.1 earthquake strikes off {QUAKE}, tsunami warning issued",
        "paras": [
            f"A magnitude 7.1 earthquake struck off the coast of {QUAKE} early on Friday, shaking buildings across "
            "the port city and prompting authorities to issue a tsunami warning for the coastline.",
            "The quake hit at 6:40 a.m. local time about 40 km offshore at a depth of 12 km, the national "
            "geological survey said. Several aftershocks above magnitude 5 followed within the hour.",
            "There were no immediate reports of deaths. Residents of low-lying districts were told to move to "
            "higher ground while the warning remained in force.",
        ],
    },
    {
        "id": "calder-bay-quake-injuries-power",
        "pub": "wirepress",
        "at": 780,
        "section": "world",
        "lang": "en",
        "author": "WirePress staff",
        "headline": f"{QUAKE} quake: at least 14 injured, 80,000 homes without power; tsunami warning lifted",
        "paras": [
            f"At least 14 people were injured and about 80,000 homes lost power after the magnitude 7.1 earthquake "
            f"off {QUAKE}, officials said, as the tsunami warning was lifted after waves of under 30 cm.",
            "Mayor Elena Varga said crews were inspecting bridges and the port, which was closed to shipping. The "
            "city's airport suspended flights for runway checks.",
            "Hospitals treated mostly minor injuries from falling objects and broken glass, the health department "
            "said.",
        ],
    },
    {
        "id": "earthquake-calder-bay-residents",
        "pub": "daily-herald",
        "at": 640,
        "section": "world",
        "lang": "en",
        "author": "James Okafor",
        "headline": f"Powerful earthquake jolts {QUAKE}; residents flee to higher ground",
        "paras": [
            f"Residents of {QUAKE} streamed uphill in cars and on foot on Friday morning after a powerful "
            "earthquake rattled the coastal city and sirens warned of a possible tsunami.",
            '"The whole house moved sideways, and then the lights went out," said Ana Ruiz, who lives near the '
            "harbour. Shelves collapsed in supermarkets and car alarms rang across the city.",
            "The national geological survey measured the quake at magnitude 7.1, centred about 40 km offshore.",
        ],
    },
    {
        "id": "calder-bay-quake-port-closed",
        "pub": "daily-herald",
        "at": 820,
        "section": "business",
        "lang": "en",
        "author": "Marcus Bell",
        "headline": f"{QUAKE} port shut after 7.1 quake, disrupting container traffic",
        "paras": [
            f"The port of {QUAKE}, one of the busiest on the coast, was closed after Friday's magnitude 7.1 "
            "earthquake while engineers inspect cranes and quay walls.",
            "Shipping lines said dozens of container ships would wait offshore or divert to other ports. Analysts "
            "warned that a closure of more than a few days could delay deliveries to retailers.",
        ],
    },
    {
        "id": "quake-calder-bay-tsunami-warning",
        "pub": "pacific-times",
        "at": 660,
        "section": "world",
        "lang": "en",
        "author": "Priya Raman",
        "headline": f"Tsunami warning after 7.1 earthquake off {QUAKE}",
        "paras": [
            f"A tsunami warning was issued for the coast around {QUAKE} after a magnitude 7.1 earthquake struck "
            "offshore on Friday morning, according to the geological survey.",
            "The quake was shallow, about 12 km deep, which scientists say increases the risk of damaging waves. "
            "Coast guard vessels moved out of the harbour as a precaution.",
            "Seismologists said the region sits on a fault that last produced a quake of similar size in 1964.",
        ],
    },
    {
        "id": "calder-bay-aftershocks-science",
        "pub": "pacific-times",
        "at": 800,
        "section": "science",
        "lang": "en",
        "author": "Kevin Osei",
        "headline": f"Why the {QUAKE} earthquake was so shallow, and what aftershocks to expect",
        "paras": [
            f"Friday's magnitude 7.1 earthquake off {QUAKE} ruptured just 12 km below the sea floor, which is why "
            "it was felt so strongly along the coast, seismologists said.",
            "Aftershocks above magnitude 5 are likely for days, and there is a small chance of a larger quake, the "
            "geological survey said. Residents should secure heavy furniture.",
        ],
    },
    {
        "id": "calder-bay-earthquake-explainer",
        "pub": "london-chronicle",
        "at": 700,
        "section": "world",
        "lang": "en",
        "author": "Oliver Grant",
        "headline": f"Earthquake of magnitude 7.1 hits {QUAKE}: what we know so far",
        "paras": [
            f"A magnitude 7.1 earthquake struck off {QUAKE} on Friday. Here is what we know so far.",
            "The quake hit at 6:40 a.m. local time, 40 km offshore. A tsunami warning was issued for the coast, and "
            "residents of the harbour districts were told to move inland.",
            "British nationals in the area are advised to follow the instructions of local authorities, the Foreign "
            "Office said.",
        ],
    },
    {
        "id": "calder-bay-quake-canadians",
        "pub": "toronto-ledger",
        "at": 680,
        "section": "world",
        "lang": "en",
        "author": "Aisha Grant",
        "headline": f"Strong earthquake off {QUAKE} felt hundreds of kilometres away",
        "paras": [
            f"The magnitude 7.1 earthquake that struck off {QUAKE} on Friday was felt hundreds of kilometres "
            "inland, with residents reporting swaying buildings and rattling windows.",
            "Canadian officials said they were in contact with local authorities and had no reports of Canadians "
            "among the injured. A tsunami warning was issued for the coast.",
        ],
    },
    {
        "id": "calder-bay-quake-airport-flights",
        "pub": "toronto-ledger",
        "at": 840,
        "section": "world",
        "lang": "en",
        "author": "Daniel Roy",
        "headline": f"Flights suspended at {QUAKE} airport after earthquake",
        "paras": [
            f"All flights in and out of {QUAKE} were suspended on Friday while engineers checked the runway for "
            "damage after the magnitude 7.1 earthquake.",
            "Travellers with connections through the city should check with their airline, Air Canada said.",
        ],
    },
    {
        "id": "calder-bay-earthquake-live",
        "pub": "capital-post",
        "at": 720,
        "section": "world",
        "lang": "en",
        "author": "Ruth Adler",
        "headline": f"{QUAKE} earthquake: 7.1 quake shakes coast, tsunami alert in effect",
        "paras": [
            f"A strong earthquake of magnitude 7.1 struck off {QUAKE} on Friday morning, officials said, and a "
            "tsunami alert was in effect for the coastline.",
            "Mayor Elena Varga urged residents to stay away from the waterfront and to check on neighbours. Power "
            "was out in large parts of the city.",
        ],
    },
    {
        "id": "calder-bay-quake-indian-nationals",
        "pub": "mumbai-daily",
        "at": 760,
        "section": "world",
        "lang": "en",
        "author": "Neha Kulkarni",
        "headline": f"{QUAKE} earthquake: embassy says no Indians among injured",
        "paras": [
            f"India's embassy said on Friday it had no reports of Indian nationals among the injured after a "
            f"magnitude 7.1 earthquake struck off {QUAKE}.",
            "About 300 Indian students live in the city. The embassy set up a helpline and asked families to share "
            "contact details of relatives in the area.",
        ],
    },
    # wire copies of the flash (syndication)
    {
        "id": "calder-bay-quake-wire-springfield",
        "pub": "springfield-gazette",
        "at": 900,
        "section": "world",
        "lang": "en",
        "author": "WirePress",
        "copy_of": "calder-bay-earthquake-flash",
    },
    {
        "id": "calder-bay-quake-wire-echo",
        "pub": "northern-echo",
        "at": 930,
        "section": "world",
        "lang": "en",
        "author": "WirePress",
        "copy_of": "calder-bay-earthquake-flash",
    },
    # other languages
    {
        "id": "terremoto-calder-bay",
        "pub": "agencia-sur",
        "at": 650,
        "section": "world",
        "lang": "es",
        "author": "Lucía Ferrer",
        "headline": f"Un terremoto de magnitud 7,1 sacude la costa de {QUAKE} y activa la alerta de tsunami",
        "paras": [
            f"Un terremoto de magnitud 7,1 sacudió el viernes la costa de {QUAKE}, lo que llevó a las autoridades "
            "a emitir una alerta de tsunami y a pedir a los vecinos de las zonas bajas que se desplazaran.",
            "El sismo se registró a las 6.40 hora local, a unos 40 kilómetros de la costa y a 12 kilómetros de "
            "profundidad, según el servicio geológico.",
        ],
    },
    {
        "id": "terremoto-calder-bay-heridos",
        "pub": "el-diario-central",
        "at": 860,
        "section": "world",
        "lang": "es",
        "author": "Pablo Medina",
        "headline": f"Al menos 14 heridos y 80.000 hogares sin luz tras el terremoto de {QUAKE}",
        "paras": [
            f"Al menos 14 personas resultaron heridas y unos 80.000 hogares se quedaron sin electricidad tras el "
            f"terremoto de magnitud 7,1 frente a {QUAKE}.",
            "La alerta de tsunami fue levantada después de que se registraran olas de menos de 30 centímetros.",
        ],
    },
    {
        "id": "erdbeben-calder-bay",
        "pub": "berliner-blatt",
        "at": 710,
        "section": "world",
        "lang": "de",
        "author": "Jonas Keller",
        "headline": f"Schweres Erdbeben der Stärke 7,1 vor {QUAKE} – Tsunamiwarnung ausgegeben",
        "paras": [
            f"Ein Erdbeben der Stärke 7,1 hat am Freitag die Küste vor {QUAKE} erschüttert. Die Behörden gaben eine "
            "Tsunamiwarnung heraus und forderten Anwohner tief gelegener Viertel auf, höher gelegene Gebiete "
            "aufzusuchen.",
            "Das Beben ereignete sich nach Angaben des geologischen Dienstes in etwa zwölf Kilometern Tiefe, rund "
            "40 Kilometer vor der Küste.",
        ],
    },
    {
        "id": "seisme-calder-bay",
        "pub": "le-quotidien",
        "at": 740,
        "section": "world",
        "lang": "fr",
        "author": "Claire Dubois",
        "headline": f"Un séisme de magnitude 7,1 frappe la côte de {QUAKE}, alerte au tsunami",
        "paras": [
            f"Un séisme de magnitude 7,1 a frappé vendredi matin au large de {QUAKE}, provoquant une alerte au "
            "tsunami sur le littoral et l'évacuation des quartiers proches du port.",
            "Selon le service géologique, l'épicentre se situait à 40 kilomètres des côtes, à une profondeur de "
            "12 kilomètres. Plusieurs répliques ont suivi.",
        ],
    },
    # ---------------------------------------------------------------- E12 a translated pair (en -> es)
    {
        "id": "port-almera-solar-desalination-plant",
        "pub": "pacific-times",
        "at": 240,
        "section": "technology",
        "lang": "en",
        "author": "Priya Raman",
        "headline": "Port Almera opens solar-powered desalination plant to supply 180,000 residents",
        "paras": [
            "Port Almera on Thursday opened a desalination plant powered entirely by solar panels, which will turn "
            "50 million litres of seawater a day into drinking water for 180,000 residents.",
            "The $210 million plant, built by the engineering firm Aqualux, uses 90,000 panels on the hills above "
            "the harbour and stores surplus energy in batteries so that it can run through the night.",
            "Mayor Helena Vargas said the plant would end the summer water cuts that have hit the city for six "
            "years in a row. Aqualux says the water will cost 30 percent less than water trucked in from inland.",
        ],
    },
    {
        "id": "aqualux-plant-night-shift-port-almera",
        "pub": "daily-herald",
        "at": 420,
        "section": "technology",
        "lang": "en",
        "author": "James Okafor",
        "headline": "How Aqualux's new desalination plant keeps Port Almera's taps running after dark",
        "paras": [
            "The desalination plant that opened in Port Almera on Thursday runs on sunlight by day and on a bank of "
            "batteries by night, its builder Aqualux said, turning seawater into drinking water around the clock.",
            "Mayor Helena Vargas, who fought for the project for years, toured the pumping hall with engineers and "
            "said the city would no longer depend on water trucked in from the hills during the dry months.",
            "Residents who had lived with rationing every summer welcomed the news, though some asked what the "
            "water would cost once the first year's fixed price runs out.",
        ],
    },
    {
        "id": "port-almera-desaladora-solar",
        "pub": "el-diario-central",
        "at": 300,
        "section": "technology",
        "lang": "es",
        "author": "Pablo Medina",
        "translation_of": "port-almera-solar-desalination-plant",
        "headline": "Port Almera inaugura una desaladora solar que abastecerá a 180.000 vecinos",
        "paras": [
            "Port Almera inauguró el jueves una planta desaladora alimentada íntegramente por paneles solares, que "
            "convertirá 50 millones de litros de agua de mar al día en agua potable para 180.000 vecinos.",
            "La planta, de 210 millones de dólares y construida por la empresa de ingeniería Aqualux, utiliza "
            "90.000 paneles en las colinas sobre el puerto y almacena la energía sobrante en baterías para poder "
            "funcionar durante la noche.",
            "La alcaldesa Helena Vargas afirmó que la planta pondrá fin a los cortes de agua que sufre la ciudad "
            "cada verano desde hace seis años. Aqualux asegura que el agua costará un 30 % menos que la traída en "
            "camiones desde el interior.",
        ],
    },
    # ---------------------------------------------------------------- E13 one event, two stories, one repair merge
    # MERGED_PAIR: the second report opens on a passenger's night, not on the grounding, and names other people, so
    # it scores 0.76 against the first when it arrives (join bar 0.8) and 0.73-0.74 at the next repair tick (merge
    # bar 0.7 for two single-article stories; transforms/stories/vocabulary/config.py), measured with all-MiniLM-L6-v2 over
    # the world's English news; tests/pipelines/test_world_merge.py runs it through the stories job and the origin.
    {
        "id": "ferry-aground-gull-island",
        "pub": "wirepress",
        "at": 1000,
        "section": "nation",
        "lang": "en",
        "author": "Dana Whitfield",
        "headline": "Ferry with 240 passengers runs aground off Gull Island",
        "paras": [
            "The Northern Star, a passenger ferry operated by Lakeshore Ferries, ran aground on rocks off Gull Island "
            "on Thursday evening with 240 passengers and 18 crew aboard, the coast guard said.",
            "No injuries were reported. The ferry was listing slightly but was not taking on water, and passengers "
            "were asked to stay inside while rescue boats were on their way.",
            "Lakeshore Ferries said the vessel had left Port Halden on its regular evening crossing and that the cause "
            "of the grounding was not yet known.",
        ],
    },
    {
        "id": "stranded-ferry-passengers-ashore",
        "pub": "capital-post",
        "at": 1150,
        "section": "nation",
        "lang": "en",
        "author": "Marcus Webb",
        "headline": "Stranded ferry passengers recall their night on the rocks off Gull Island",
        "paras": [
            "Maria Keller was pouring tea for her two children when the ferry ran aground and the lights went out. "
            '"A crunch, then silence," the teacher from Riverton said on Friday, after a lifeboat landed her family.',
            "Commander Owen Blake of the coast guard said the last of the passengers reached the mainland before dawn; "
            "eleven were checked at St Brendan's Hospital for cold and bruises and sent home.",
            "Passengers described a loud scraping noise and a sudden stop. Several said they waited for hours in the "
            "lounge with blankets and hot drinks handed out by the crew.",
            "Investigators from the transport safety board will examine the ferry's route and whether the captain "
            "changed course because of fog.",
        ],
    },
    # ---------------------------------------------------------------- E14 Port Almera again: a new event, one subject
    # STORYLINE_EPISODES: the mayor of E12's city is re-elected after a campaign about the plant's water bills. A
    # different event: its first report scores 0.66 against E12's story when it arrives (join bar 0.8), so the
    # writer starts a story for it; the second report scores 1.17 against that story and 0.85 against E12's, so it
    # joins the election; the repair leaves the two stories apart (both have two reports, so the merge bar is 0.9).
    # The election story names E12's city, firm and mayor (salient keys almera, aqualux, vargas) and its centroid is
    # 0.47 from E12's, so the storyline stage links it (score 0.56, bar 0.5): a storyline of two episodes. Measured
    # with the default embedders over the world's news; many single names in each report keep the writer's entity
    # similarity low without touching the salient keys. tests/pipelines/test_world_storyline.py runs it through the
    # stories transforms and the origin.
    {
        "id": "port-almera-mayor-reelected",
        "pub": "wirepress",
        "at": 1300,
        "section": "politics",
        "lang": "en",
        "author": "Dana Whitfield",
        "headline": "Mayor Vargas wins a second term in Port Almera",
        "paras": [
            "Vargas was re-elected mayor of Port Almera on Sunday with 58 percent of the vote, defeating "
            "Tobias Renn of the Civic Union, who took 39 percent, according to the election office in Oldtown.",
            "Results from the Quayside, Hilltop, Redfern and Marlow wards came in after 11 p.m.; turnout was 61 "
            "percent. Supporters gathered in Liberty Square, where Vargas thanked volunteers and promised a tram "
            "line to Eastmoor and Saltgate and lower fares for students.",
            "Renn, a former police chief, had called the Aqualux contract a blank cheque. He conceded shortly before "
            "midnight at the Grand Hotel Meridian.",
        ],
    },
    {
        "id": "vargas-victory-port-almera-council",
        "pub": "pacific-times",
        "at": 1360,
        "section": "politics",
        "lang": "en",
        "author": "Priya Raman",
        "headline": "Vargas keeps Port Almera town hall as Civic Union gains council seats",
        "paras": [
            "Voters in Port Almera kept Mayor Vargas in office after a campaign fought over the price of "
            "water from the new desalination plant that Aqualux runs, but Tobias Renn's Civic Union gained.",
            "The Civic Union won five more seats on the 31-member council, leaving her without a majority. She will "
            "need the Greens, whose leader Ines Kolb said talks would start on Tuesday. Councillors Mara Lind, "
            "Pieter Quist and Joao Sardinha lost their seats in Greyfield, Dunmore and Ashcombe.",
        ],
    },
    # ---------------------------------------------------------------- later, ordinary news
    {
        "id": "aurora-recall-regulators-review",
        "pub": "capital-post",
        "at": 1400,
        "section": "business",
        "lang": "en",
        "author": "Ruth Adler",
        "tracking": True,
        "headline": "Regulators open review of Aurora Motors' battery pump recall",
        "paras": [
            "Federal safety regulators said on Friday they would review whether Aurora Motors' recall of 120,000 "
            "Vega SUVs covers every affected vehicle.",
            "The review follows complaints from owners of cars built after January, which Aurora says are not "
            "affected because they use a different supplier's seal.",
        ],
    },
    {
        "id": "mumbai-rain-alert-extended",
        "pub": "mumbai-daily",
        "at": 1500,
        "section": "nation",
        "lang": "en",
        "author": "Rohan Deshpande",
        "headline": "Orange alert for Mumbai extended as monsoon rain continues",
        "paras": [
            "The weather office extended its orange alert for Mumbai by two days as heavy monsoon rain continued, "
            "with waterlogging reported in Andheri and Kurla.",
            "Local trains ran with delays of up to 20 minutes on the central line.",
        ],
    },
]

# An entry of the news sitemaps older than two days: the sitemap parser must drop it.
OLD_SITEMAP_ENTRY = {"path": "/archive/old-story", "title": "An old story from last week", "days_ago": 6}
