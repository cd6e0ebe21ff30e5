// A shared library with no MPLOADER_REGISTER_DATASET: mploader-bench --dataset-lib refuses it.
int mploader_test_plugin_without_datasets() { return 0; }
