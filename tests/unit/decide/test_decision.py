"""The decision's sentences: changes named as the keys a user types."""


def test_a_change_by_address_reads_as_the_keys_a_user_types():
    from perfstudy.decide.advisor import describe_changes

    changes = {"pipeline.workers.map_2": 2, "pipeline.workers.map_2:multiprocessing": True,
               "pipeline.workers.map_1": 1}
    assert describe_changes(changes, {}) == \
        "pipeline.workers.map_2=2 with pipeline.processes.map_2=true, pipeline.workers.map_1=1"
    assert describe_changes({"pipeline.workers.map_3:multiprocessing": False}, {}) == \
        "pipeline.processes.map_3=false"
    assert describe_changes({"pipeline.extra_transform_workers": 2,
                             "pipeline.extra_transform_workers:multiprocessing": True}, {}) == \
        "pipeline.extra_transform_workers=2 with pipeline.extra_transform_multiprocessing=true"
