"""
How a JSON column's counter, list append and list removal are written in SQL, per database.

Every change of a store is one UPDATE (`compiler.Writes.change`), never a read, an edit in Python
and a write. `{column}` is the JSON column, `{expression}` what its counters so far made of it, and
`{items}` (SQLite) the path and value pairs of the items appended.
"""

POSTGRESQL = {
    "incr": "jsonb_set({expression}, ARRAY[%s], to_jsonb(COALESCE(({column} ->> %s)::bigint, 0) + %s))",
    "append": "{column} || %s",
    "discard": (
        "COALESCE((SELECT jsonb_agg(e.item ORDER BY e.n) FROM jsonb_array_elements({column}) WITH ORDINALITY"
        " AS e(item, n) WHERE e.item <> %s::jsonb), '[]'::jsonb)"
    ),
}
SQLITE = {
    "incr": "json_set({expression}, '$.\"' || %s || '\"', COALESCE(json_extract({column}, '$.\"' || %s || '\"'), 0) + %s)",
    "append": "json_insert({column}, {items})",
    "discard": (
        "(SELECT json_group_array(json(e.item)) FROM (SELECT CASE WHEN j.type IN ('object', 'array') THEN j.value"
        " ELSE json_quote(j.value) END AS item FROM json_each({column}) AS j ORDER BY j.key) AS e WHERE e.item <> json(%s))"
    ),
}
