"""Django settings for the Flowdeck project.

Configuration comes from the environment: `DATABASE_URL` (default: a SQLite file in the project folder,
the embedded default), `FLOWDECK_SECRET_KEY` (required: see `flowdeck.console.deploy`), `FLOWDECK_DEBUG`,
`FLOWDECK_ALLOWED_HOSTS`, and the security switches of the block marked "Security" below.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

from flowdeck.console import csp, database_url, deploy

BASE_DIR = Path(__file__).resolve().parent.parent

# Every FLOWDECK_* variable, checked at once (a bad one refuses to start, naming each: console.deploy).
env = deploy.environment(os.environ)  # lower case: not a setting
DEBUG = env.FLOWDECK_DEBUG
ALLOWED_HOSTS = list(env.FLOWDECK_ALLOWED_HOSTS)

# No "daphne" app: it only makes `runserver` serve ASGI (the console is served by daphne itself, README), and
# its import of Twisted costs every manage.py command, CLI call and worker start about 0.3 s of CPU.
INSTALLED_APPS = [
    # before django.contrib.auth: its createsuperuser validates a given password too
    "flowdeck.console.accounts",
    "django.contrib.admin",  # read-only pages of the store's rows, and the API tokens (under /admin/)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "axes",
    "flowdeck.store.django.apps.FlowStoreConfig",
    "flowdeck.console.apps.ConsoleConfig",
    "examples.fulfilment.apps.FulfilmentConfig",
]

# What a startproject has, plus django-axes (the login's throttling). The console's own protections (its
# CSP and headers, the API's guard, the refusal of unstorable text) travel with its URLs
# (`flowdeck.console.gate`), so none of them is middleware. One optional middleware of ours remains because it
# protects the whole site: a session cookie holding a NUL would otherwise reach the database from any page
# that reads the session (the admin's too) as a 500; the console's URLs drop such a cookie themselves.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "flowdeck.console.middleware.ImplausibleSessionCookie",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: it turns a lockout into its page
]

ROOT_URLCONF = "flowdeck.console.project_urls"  # the admin, and the console at the root

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = None
ASGI_APPLICATION = "flowdeck.console.asgi.application"


def _database(url: str) -> dict[str, object]:
    # Request threads close their connection when the request ends (under ASGI each sync_to_async thread
    # would otherwise keep one open); the store's own thread pool keeps its connections for its lifetime.
    config: dict[str, object] = database_url.parse(url, conn_max_age=0)
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock at BEGIN, so two
        # processes never both read-then-upgrade and deadlock (SQLite's SQLITE_BUSY on upgrade).
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "timeout": 30,
        }
    return config


def _default_sqlite() -> Path:
    """`db.sqlite3` beside the running manage.py; for anything else (`flowdeck`, daphne, pytest) in the
    working directory. Never beside the installed package: `manage.py` in the project folder and `flowdeck`
    run there share one file, whether the package is installed editable or not."""
    import sys

    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    folder = script.absolute().parent if script is not None and script.name == "manage.py" else Path.cwd()
    return folder / "db.sqlite3"


DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{_default_sqlite()}")
DATABASES = {"default": _database(DATABASE_URL)}

# Behind a transaction-mode pooler (PgBouncer, docs/pooling.md): FLOWDECK_TRANSACTION_POOLER=1 with
# DATABASE_URL on the pooler, FLOWDECK_LISTEN_DATABASE_URL where the LISTEN connection keeps a session
# (PostgreSQL itself, or a session-mode pool entry), and optionally FLOWDECK_WRITES_DATABASE_URL for group
# commit's connections (a session there lets them prepare). Django's named cursors are declared WITH HOLD
# outside a transaction, which such a pool cannot keep: they are turned off, as Django's docs ask.
FLOWDECK_TRANSACTION_POOLER = env.FLOWDECK_TRANSACTION_POOLER
if FLOWDECK_TRANSACTION_POOLER:
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True


def _another_road(url: str | None, alias: str) -> str | None:
    """The same database by another URL, as `alias` (a test run makes no database of its own for it)."""
    if not url:
        return None
    DATABASES[alias] = _database(url) | {"TEST": {"MIRROR": "default"}}
    return alias


FLOWDECK_LISTEN_DATABASE_ALIAS = _another_road(env.FLOWDECK_LISTEN_DATABASE_URL, "flowdeck_listen")
FLOWDECK_WRITES_DATABASE_ALIAS = _another_road(env.FLOWDECK_WRITES_DATABASE_URL, "flowdeck_writes")
# A streaming replica the console's lists, overview, search, timeline and history read (docs/failover.md)
FLOWDECK_READ_REPLICA_ALIAS = _another_road(env.FLOWDECK_READ_REPLICA_DATABASE_URL, "flowdeck_replica")

# ---- Security (issue 11, hardening): the secret key, deployment switches, login throttling, CSP ----------
# No published fallback key: FLOWDECK_SECRET_KEY, else the demo's kept key, else refuse (console.deploy).
SECRET_KEY = deploy.secret_key(os.environ, debug=DEBUG, database_url=DATABASE_URL, argv=sys.argv)
# Behind TLS: FLOWDECK_SECURE_COOKIES=1, FLOWDECK_SSL_REDIRECT=1, FLOWDECK_HSTS_SECONDS=31536000 make
# `manage.py check --deploy` clean; FLOWDECK_TLS_PROXY=1 trusts a proxy's X-Forwarded-Proto: https.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.FLOWDECK_SECURE_COOKIES
SECURE_SSL_REDIRECT = env.FLOWDECK_SSL_REDIRECT
SECURE_HSTS_SECONDS = env.FLOWDECK_HSTS_SECONDS
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.FLOWDECK_HSTS_INCLUDE_SUBDOMAINS
SECURE_HSTS_PRELOAD = env.FLOWDECK_HSTS_PRELOAD
if env.FLOWDECK_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_FAILURE_VIEW = "flowdeck.console.urls.csrf_failure"  # the console's styled 403, with its headers
CSRF_TRUSTED_ORIGINS = list(env.FLOWDECK_CSRF_TRUSTED_ORIGINS)
SESSION_COOKIE_HTTPONLY = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# The Content-Security-Policy of every response: the console's own (console.csp says why each source).
FLOWDECK_CSP: dict[str, list[str]] = csp.CONSOLE_POLICY

# Login throttling (django-axes): after FLOWDECK_LOGIN_FAILURE_LIMIT failures for one username from one
# address, that pair is refused for FLOWDECK_LOGIN_COOLOFF_SECONDS (the console's styled page, 429).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.FLOWDECK_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=env.FLOWDECK_LOGIN_COOLOFF_SECONDS)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "flowdeck/console/locked_out.html"
AXES_VERBOSE = False
# ---- end of the security block ----------------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = (
    "flowdeck:login"  # the console's login page, by name: it follows the console wherever it is mounted
)

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # a record made while a node's body runs carries `execution_id` and `node_key` (docs/tracing.md)
    "filters": {"flowdeck_node": {"()": "flowdeck.engine.tracing.NodeLogFilter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["flowdeck_node"]}
    },
    "root": {"handlers": ["console"], "level": env.FLOWDECK_LOG_LEVEL or "WARNING"},
    "loggers": {
        "flowdeck": {"level": env.FLOWDECK_LOG_LEVEL or "INFO", "propagate": True},
    },
}

# Modules holding flows, besides every installed app's `flows.py`.
FLOWDECK_FLOW_MODULES: list[str] = []

# The flows module (read by discovery, as any flows module is) declaring the versions no process serves,
# that the demo parks an execution on: here, the fulfilment example installed above. The settings are the
# one place naming the example; flowdeck.console.demo itself imports none.
FLOWDECK_DEMO_PREVIOUS_FLOWS = "examples.fulfilment.previous"
