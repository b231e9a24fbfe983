import pytest

from apps.ledger.identities import InvalidPersona, Persona, check_permissions, parse_persona


class TestPersonaIdentity:
    def test_provider_and_external_id(self):
        assert parse_persona("shop:customer-42") == Persona("shop", "", "customer-42")

    def test_provider_scope_and_external_id(self):
        persona = parse_persona("okta:acme:alice@acme.com")

        assert persona == Persona("okta", "acme", "alice@acme.com")
        assert str(persona) == "okta:acme:alice@acme.com"

    @pytest.mark.parametrize("value", ["alice", "a:b:c:d", ":alice", "shop:", "shop:has space", "", None, 42])
    def test_other_shapes_are_refused(self, value):
        with pytest.raises(InvalidPersona):
            parse_persona(value)


class TestPermissions:
    def test_are_returned_in_canonical_order_without_repeats(self):
        assert check_permissions(["approve", "view", "view"]) == ["view", "approve"]

    def test_unknown_ones_are_refused(self):
        with pytest.raises(ValueError, match="unknown permissions"):
            check_permissions(["view", "delete_everything"])
