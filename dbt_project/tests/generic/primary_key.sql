{#- Fails with each key held by more than one row or null in any of its columns: the unique and
    not_null tests of a key in one test. dbt spends about 40 ms of its one interpreter on each test
    it runs, whatever the table's size, and a key of one or two columns took two or three tests. -#}
{% test primary_key(model, columns) %}
    {%- set key = columns | join(', ') %}
    {{ test_unique_combination_of_columns(model, columns) }}
union all
select {{ key }}, count(*) as n_rows
from {{ model }}
where {{ columns | join(' is null or ') }} is null
group by {{ key }}
{% endtest %}
