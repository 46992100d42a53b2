{#- A contract's not_null constraints on Spark. dbt-spark sets them on Delta tables only (ALTER
    COLUMN ... SET NOT NULL); a Parquet table takes none, so a null would pass silently where DuckDB
    refuses the insert. For those, the table is checked once written: a not_null column holding a
    null fails the model, naming the columns, and the models after it are skipped. -#}
{% macro spark__persist_constraints(relation, model) %}
    {%- if not config.get('contract').enforced -%}
        {{ return('') }}
    {%- endif -%}
    {%- if config.get('file_format', 'delta') == 'delta' -%}
        {%- do alter_table_add_constraints(relation, model.constraints) -%}
        {%- do alter_column_set_constraints(relation, model.columns) -%}
    {%- else -%}
        {%- do assert_not_null_columns(relation, model.columns) -%}
    {%- endif -%}
{% endmacro %}

{% macro assert_not_null_columns(relation, columns) %}
    {%- set not_null = [] -%}
    {%- for column in columns.values() -%}
        {%- if column.constraints | selectattr('type', 'equalto', 'not_null') | list -%}
            {%- do not_null.append(column.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not not_null -%}
        {{ return('') }}
    {%- endif -%}
    {%- set counts -%}
        select
        {%- for name in not_null %}
            count_if({{ adapter.quote(name) }} is null){{ ',' if not loop.last }}
        {%- endfor %}
        from {{ relation }}
    {%- endset -%}
    {%- set nulls = run_query(counts).rows[0] -%}
    {%- set broken = [] -%}
    {%- for name in not_null -%}
        {%- if nulls[loop.index0] > 0 -%}
            {%- do broken.append(name ~ ' (' ~ nulls[loop.index0] ~ ' rows)') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if broken -%}
        {{ exceptions.raise_compiler_error(
            'not_null constraint violated in ' ~ relation ~ ': ' ~ broken | join(', ')
        ) }}
    {%- endif -%}
{% endmacro %}
