"""Two foreign keys lose their own index: a composite index starting with each covers it,
and every command wrote both again (an event insert, an instance update)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0006_attempt_timeout_at'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='workflowevent',
            name='instance',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='django_workflows.workflowinstance', verbose_name='instance'),
        ),
        migrations.AlterField(
            model_name='workflowinstance',
            name='owner',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='workflow_instances', to=settings.AUTH_USER_MODEL, verbose_name='owner'),
        ),
    ]
