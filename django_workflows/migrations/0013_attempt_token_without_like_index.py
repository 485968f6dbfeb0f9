# PostgreSQL only: Django gives a primary key of text a second index (varchar_pattern_ops,
# "_like") for LIKE 'prefix%' look-ups. No query looks an attempt up by a prefix of its
# token, and every claim and result wrote that index too (about 200 bytes of WAL per
# operation: bench/operations.py --profile). An AlterField of the token would create it
# again; this migration's reverse does.

from django.db import migrations

TABLE = "django_workflows_attempt"


def _like_indexes(schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = %s AND indexdef LIKE %s",
            [TABLE, "%(token varchar_pattern_ops)%"])
        return [name for (name,) in cursor.fetchall()]


def drop_like_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in _like_indexes(schema_editor):
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def create_like_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql" or _like_indexes(schema_editor):
        return
    qn = schema_editor.quote_name
    schema_editor.execute(f"CREATE INDEX {qn(TABLE + '_token_like')} ON {qn(TABLE)} "
                          "(token varchar_pattern_ops)")


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0012_workflow_page_indexes'),
    ]

    operations = [
        migrations.RunPython(drop_like_index, create_like_index),
    ]
