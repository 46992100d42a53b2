{#- on-run-start: on Spark, make `source('raw', ...)` resolve to the Parquet folders the Python
    assets write, `<warehouse>/raw/<table>/` (the warehouse folder is the session's
    spark.sql.warehouse.dir, profiles.yml). Every command registers them again, so that a new
    warehouse folder needs no step of its own and a folder rewritten with other columns is read with
    them (a table keeps the schema it was registered with). Dropping an external table leaves its
    files. On DuckDB the raw tables are in the build database already: nothing to do. -#}
{% macro register_raw_sources() -%}
    {{ return(adapter.dispatch('register_raw_sources', 'paperhouse')()) }}
{%- endmacro %}

{% macro default__register_raw_sources() -%}
{%- endmacro %}

{% macro spark__register_raw_sources() -%}
    {%- if execute -%}
        {%- set raw_folder = spark_warehouse_dir() ~ '/raw' -%}
        {%- set schemas = [] -%}
        {%- for source in graph.sources.values() if source.source_name == 'raw' -%}
            {%- if source.schema not in schemas -%}
                {%- do run_query('create database if not exists ' ~ source.schema) -%}
                {%- do schemas.append(source.schema) -%}
            {%- endif -%}
            {%- set table = source.schema ~ '.' ~ source.identifier -%}
            {%- do run_query('drop table if exists ' ~ table) -%}
            {%- do run_query(
                'create table ' ~ table ~ " using parquet location '" ~ raw_folder ~ '/' ~ source.identifier ~ "'"
            ) -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}

{#- The session's warehouse folder, without a trailing slash. -#}
{% macro spark_warehouse_dir() -%}
    {%- set setting = run_query('set spark.sql.warehouse.dir') -%}
    {{ return(setting.columns[1].values()[0].rstrip('/')) }}
{%- endmacro %}
