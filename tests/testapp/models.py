# Models that tests need (workflow targets, fixtures) are added here, with their migrations.
