//! Images in chat requests end to end against the simulator: generated PNGs of the asked size
//! and count as `image_url` parts, what an image costs learned from the server's counts at setup,
//! and every response's prompt count checked against the text and its images.

use crate::common;

use common::{assert_refused, json, json_lines, run_against, Simulator};

#[test]
fn image_cases_are_exact_in_text_and_images_and_say_what_an_image_costs() {
    let sim = Simulator::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let args = [
        "--api",
        "chat",
        "--input-tokens",
        "48",
        "--output-tokens",
        "4",
        "--images",
        "0,1,3",
        "--image-size",
        "224x224,100x60",
        "--concurrency",
        "2",
        "--rounds",
        "2",
        "--seed",
        "9",
    ];
    let (run, dir) = run_against(out.path(), "images", &sim.url, &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    let ids: Vec<&str> = summary["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "in48-c2-out4",
            "in48-c2-out4-img1x224x224",
            "in48-c2-out4-img1x100x60",
            "in48-c2-out4-img3x224x224",
            "in48-c2-out4-img3x100x60"
        ]
    );
    // The simulator's cost: a token per 28-pixel patch (8 × 8 at 224×224, 4 × 3 at 100×60).
    let cost = |w: u64| if w == 224 { 64 } else { 12 };
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 5 * 5, "a warmup and 4 measured per case");
    for r in &records {
        assert_eq!(
            (r["status"].as_str(), r["verified"].as_bool()),
            (Some("ok"), Some(true)),
            "{r}"
        );
        let images = &r["images"];
        let expected = match images["count"].as_u64() {
            None => 0,
            Some(n) => {
                let tokens = n * cost(images["width"].as_u64().expect("width"));
                assert_eq!(images["tokens"].as_u64(), Some(tokens), "{r}");
                tokens
            }
        };
        assert_eq!(r["input_tokens"], 48, "{r}");
        assert_eq!(r["prompt_tokens"].as_u64(), Some(48 + expected), "{r}");
    }
    let case = &summary["cases"][3];
    assert_eq!(case["images"]["count"], 3);
    assert_eq!(case["images"]["tokens"], 3 * 64);
    let counting = summary["counting"]["prompts"].as_str().expect("counting");
    for said in [
        "1 image of 224×224: 64 tokens",
        "3 images of 224×224: 192 tokens",
        "3 images of 100×60: 36 tokens",
    ] {
        assert!(counting.contains(said), "{said}: {counting}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("| 48 + 3 images of 224×224 | 2 |"),
        "{report}"
    );
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["cases"][4]["images"]["height"], 60, "{campaign}");
}

#[test]
fn image_options_that_cannot_apply_are_refused_in_one_line() {
    for (args, said) in [
        (&["--images", "1"][..], "--images needs --api chat"),
        (
            &["--api", "chat", "--image-size", "32x32"][..],
            "--image-size needs --images",
        ),
        (
            &["--api", "chat", "--images", "1", "--image-size", "32"][..],
            "WIDTHxHEIGHT",
        ),
        (
            &["--api", "chat", "--images", "1", "--turns", "2"][..],
            "--images does not go with --turns",
        ),
    ] {
        assert_refused(args, said);
    }
}
