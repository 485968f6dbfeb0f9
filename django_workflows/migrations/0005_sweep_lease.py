"""The sweep's lease: one row the sweepers in django-q2's workers take turns through."""

from django.db import migrations, models


def make_the_lease(apps, schema_editor):
    apps.get_model("django_workflows", "SweepLease").objects.using(
        schema_editor.connection.alias).get_or_create(name="sweep")


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0004_reference'),
    ]

    operations = [
        migrations.CreateModel(
            name='SweepLease',
            fields=[
                ('name', models.CharField(max_length=40, primary_key=True, serialize=False)),
                ('holder', models.CharField(blank=True, default='', max_length=200)),
                ('held_until', models.DateTimeField(blank=True, null=True)),
                ('swept_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'sweep lease',
            },
        ),
        migrations.RunPython(make_the_lease, migrations.RunPython.noop),
    ]
