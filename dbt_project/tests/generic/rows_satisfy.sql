{#- Fails with the rows for which any of the conditions (SQL boolean expressions over the model's
    columns) is false; a condition that is null holds, so a nullable column states its own rule
    ("(share_change is null) = (previous_year is null)"). One test for a model's accepted ranges and
    rules across columns instead of one per column: dbt pays a fixed cost for every test it runs. -#}
{% test rows_satisfy(model, conditions) %}
select *
from {{ model }}
where not ({{ conditions | join(') or not (') }})
{% endtest %}
