"""The Kubernetes manifests in deploy/ are valid for the Kubernetes API and probe routes that exist."""

from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from django.urls import resolve

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
MANIFESTS = sorted(DEPLOY.glob("*.yaml"))
KUBERNETES = "1.37.0"


def documents():
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text()):
            yield path.name, document


class TestManifests:
    @pytest.mark.parametrize(("name", "document"), list(documents()), ids=lambda v: v if isinstance(v, str) else "")
    def test_each_manifest_is_valid_against_the_kubernetes_schema(self, name, document):
        kubernetes_validate.validate(document, KUBERNETES, strict=True)

    def test_the_probes_point_at_the_health_routes(self):
        deployment = next(d for _, d in documents() if d["kind"] == "Deployment")
        container = deployment["spec"]["template"]["spec"]["containers"][0]

        paths = {probe: container[probe]["httpGet"]["path"] for probe in ("startupProbe", "livenessProbe", "readinessProbe")}

        assert paths == {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
        assert resolve("/healthz").url_name == "healthz"
        assert resolve("/readyz").url_name == "readyz"
