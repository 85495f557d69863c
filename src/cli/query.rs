//! `runlog query`: one SQL statement over a warehouse or over logs read in memory.

use super::*;

#[derive(Args)]
pub struct QueryArgs {
    #[command(flatten)]
    pub source: Source,
    /// Log PATHs (files, folders, or s3://, gs://, az:// objects and prefixes; unless
    /// --warehouse) followed by the SQL text or a .sql file.
    #[arg(required = true, value_name = "PATH... SQL")]
    pub args: Vec<String>,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value = "table")]
    pub format: Format,
    #[command(flatten)]
    pub window: WindowArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run(args: QueryArgs) -> Result<()> {
    let QueryArgs {
        source,
        mut args,
        format,
        window,
        engine,
    } = args;
    let window = window.window()?;
    let sql_arg = args.pop().expect("clap requires one argument");
    let paths: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    let sql = runlog::query::load_sql(&sql_arg)?;
    let tables = runlog::plan_tables::Demand::of(&[&sql], &window);
    let rt = runtime()?;
    let ctx = engine_context(&engine, &source, &paths, Some(&tables), &rt)?;
    rt.block_on(runlog::query::restrict_to_window(&ctx, &window))?;
    let (schema, batches) = rt.block_on(runlog::query::run_sql(&ctx, &sql))?;
    let fmt = match format {
        Format::Table => OutputFormat::Table,
        Format::Csv => OutputFormat::Csv,
        Format::Json => OutputFormat::Json,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    runlog::query::write_result(&mut out, &schema, &batches, fmt)?;
    out.flush()?;
    Ok(())
}
