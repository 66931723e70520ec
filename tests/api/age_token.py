"""`python -m tests.api.age_token NAME SECONDS`: as if SECONDS had passed for the tokens named NAME.

Every instant the token row holds (created, last used, expires, revoked) moves SECONDS into the past, which
is what the server sees when that much time goes by; the tests never sleep for it.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

import django


def age(name: str, seconds: float) -> int:
    from django.db.models import F

    from flowdeck.console.models import ApiToken

    by = timedelta(seconds=seconds)
    tokens = ApiToken.objects.filter(name=name)
    tokens.update(created=F("created") - by)
    for column in ("last_used", "expires", "revoked"):
        tokens.filter(**{f"{column}__isnull": False}).update(**{column: F(column) - by})
    return tokens.count()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.api.settings")
    django.setup()
    print(age(sys.argv[1], float(sys.argv[2])))
