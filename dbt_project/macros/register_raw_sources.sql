{#- on-run-start: on Spark, make `source('raw', ...)` resolve to the Parquet folders the Python
    assets write, `<warehouse>/raw/<table>/` (the warehouse folder is the session's
    spark.sql.warehouse.dir, profiles.yml). Every command registers them again, so that a new
    warehouse folder needs no step of its own and a folder rewritten with other columns is read with
    them (a table keeps the schema it was registered with). Dropping an external table leaves its
    files. Only the sources the command reads are registered, directly or through the models it
    selects and their upstream models: each registration is three statements through the catalog,
    seconds on Spark, and a command of one model (quality_runs) needs one or two of the 15.
    On DuckDB the raw tables are in the build database already: nothing to do. -#}
{% macro register_raw_sources() -%}
    {{ return(adapter.dispatch('register_raw_sources', 'paperhouse')()) }}
{%- endmacro %}

{% macro default__register_raw_sources() -%}
{%- endmacro %}

{% macro spark__register_raw_sources() -%}
    {%- if execute -%}
        {%- set raw_folder = spark_warehouse_dir() ~ '/raw' -%}
        {%- set schemas = [] -%}
        {%- set read = sources_read(selected_resources) -%}
        {%- for source in graph.sources.values() if source.source_name == 'raw' and source.unique_id in read -%}
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

{#- The unique ids of the sources the nodes read, directly or through the nodes upstream of them.
    A node this graph does not hold (none selected, say) reads every source: nothing is left out. -#}
{% macro sources_read(nodes) -%}
    {%- set queue = nodes | list -%}
    {%- set seen = [] -%}
    {%- set read = [] if nodes else graph.sources.keys() | list -%}
    {%- for unique_id in queue if unique_id not in seen -%}
        {%- do seen.append(unique_id) -%}
        {%- set unknown = unique_id not in graph.nodes and unique_id not in graph.sources -%}
        {%- do read.append(unique_id) if unique_id in graph.sources else none -%}
        {%- do read.extend(graph.sources.keys() | list) if unknown else none -%}
        {%- do queue.extend(graph.nodes.get(unique_id, {}).get('depends_on', {}).get('nodes', [])) -%}
    {%- endfor -%}
    {{ return(read) }}
{%- endmacro %}
