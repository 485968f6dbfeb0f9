"""The example's back-office groups: the tasks ask for them (check W020 looks)."""

from django.db import migrations

GROUPS = ("operators", "managers", "directors")


def make_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in GROUPS:
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(make_groups, migrations.RunPython.noop)]
