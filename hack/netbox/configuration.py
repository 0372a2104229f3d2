# NetBox configuration for the test kit's throwaway instances (hack/netbox.sh migrate, hack/testkit/netbox.ts).
# Everything comes from the environment the starter sets, so no secret, port or machine path is ever written here;
# the starter generates SECRET_KEY and the token pepper per run. NetBox loads this module through
# NETBOX_CONFIGURATION=configuration with this folder on PYTHONPATH.
import os


def _required(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: start NetBox through hack/netbox.sh or hack/testkit/netbox.ts")
    return value


ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "netbox",
        "USER": "netbox",
        "PASSWORD": "",
        "HOST": "127.0.0.1",
        "PORT": _required("NETBOX_TEST_PG_PORT"),
        "CONN_MAX_AGE": 300,
    }
}

_REDIS_PORT = int(_required("NETBOX_TEST_REDIS_PORT"))
REDIS = {
    "tasks": {"HOST": "127.0.0.1", "PORT": _REDIS_PORT, "DATABASE": 0, "SSL": False},
    "caching": {"HOST": "127.0.0.1", "PORT": _REDIS_PORT, "DATABASE": 1, "SSL": False},
}

SECRET_KEY = _required("NETBOX_TEST_SECRET_KEY")
API_TOKEN_PEPPERS = {1: _required("NETBOX_TEST_TOKEN_PEPPER")}

# An offline, throwaway machine: no phoning home, no release checks.
CENSUS_REPORTING_ENABLED = False
RELEASE_CHECK_URL = None
ISOLATED_DEPLOYMENT = True
