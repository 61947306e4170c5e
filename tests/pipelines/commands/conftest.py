"""The commands are tested on what the stages make: the editions stage's fixtures (a small world of stories and a
ranker factory, for pages the operator commands steer) and the articles stage's page builders (``kit``, for
``newsroom extract``) are shared from their conftest files rather than copied."""

from tests.transforms.articles.conftest import kit  # noqa: F401  (pytest fixture)
from tests.transforms.editions.conftest import make_ranker, world  # noqa: F401  (pytest fixtures)
