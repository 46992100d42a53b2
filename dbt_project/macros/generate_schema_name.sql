{#- Models land in the schema they name (`marts`, not `main_marts`): BI users see clean names. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
