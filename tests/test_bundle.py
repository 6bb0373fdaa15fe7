

def test_as_saved_is_what_save_and_load_give(tmp_path):
    """Bundle.as_saved(): the models rebuilt from their saved documents, the bundle a save and load give."""
    import json as _json

    from acmemodel import load_default

    b = load_default()
    again = b.as_saved()
    assert list(again.models) == list(b.models) and again.created_utc == b.created_utc
    from acmemodel.models.bundle import Bundle

    loaded = Bundle.load(b.save(tmp_path / "b"))
    assert _json.dumps(again._document(), sort_keys=True) == _json.dumps(loaded._document(), sort_keys=True)
