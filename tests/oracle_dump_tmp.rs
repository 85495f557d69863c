#[path = "oracle/randgen.rs"]
mod randgen;
#[test]
fn dump() {
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let idx: usize = std::env::var("IDX").unwrap().parse().unwrap();
    let mut lines: Vec<serde_json::Value> = randgen::agent_lines(seed, idx, false)
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    lines.sort_by_key(|v| v["seq"].as_u64());
    for v in lines {
        println!(
            "{} {} {} {} {}",
            v["seq"],
            v["session"].as_str().unwrap(),
            v["turn"].as_str().unwrap_or("-"),
            v["type"].as_str().unwrap(),
            v.get("data").map(|d| d.to_string()).unwrap_or_default()
        );
    }
}
